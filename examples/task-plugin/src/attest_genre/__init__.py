"""attest-genre: a task plug-in for attest (review or original research?); the task is `attest_genre.task.TASK`."""
