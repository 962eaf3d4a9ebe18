"""The local store: answers in a diskcache directory, run records as files under cache/runs/."""
