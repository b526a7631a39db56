"""`kata pack`: the student pack of a course (grader.pack.build) and how it installs (grader.pack.wheel)."""
