"use strict";
(function () {
  var table = document.querySelector("table.cases");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var family = document.getElementById("f-family");
  var kind = document.getElementById("f-kind");
  var text = document.getElementById("f-text");
  var failed = document.getElementById("f-failed");
  var count = document.getElementById("f-count");
  function apply() {
    var fam = family ? family.value : "";
    var k = kind ? kind.value : "";
    var q = text ? text.value.toLowerCase() : "";
    var onlyFailed = failed ? failed.checked : false;
    var shown = 0;
    rows.forEach(function (row) {
      var ok = (!fam || row.dataset.family === fam) &&
        (!k || row.dataset.change === k) &&
        (!onlyFailed || row.dataset.failed === "1") &&
        (!q || row.textContent.toLowerCase().indexOf(q) !== -1);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    if (count) { count.textContent = shown + " of " + rows.length + " rows shown"; }
  }
  [family, kind, failed].forEach(function (el) { if (el) { el.addEventListener("change", apply); } });
  if (text) { text.addEventListener("input", apply); }
  var sorter = document.getElementById("sort-score");
  var order = 0;
  var sortLabel = sorter ? sorter.textContent : "";
  if (sorter) {
    sorter.addEventListener("click", function () {
      order = order === 1 ? -1 : 1;
      var sorted = rows.slice().sort(function (a, b) {
        var x = parseFloat(a.dataset.score), y = parseFloat(b.dataset.score);
        x = isNaN(x) ? -1 : x; y = isNaN(y) ? -1 : y;
        return order * (x - y) || (Number(a.dataset.index) - Number(b.dataset.index));
      });
      sorted.forEach(function (row) { body.appendChild(row); });
      sorter.textContent = sortLabel + (order === 1 ? " \u25b2" : " \u25bc");
    });
  }
  apply();
}());
