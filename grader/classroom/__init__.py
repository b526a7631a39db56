"""`kata grade`: a whole class graded at once.

- batch: every student's kata files, in parallel, resumably, whatever a file does;
- gradesheet: the grade sheet (CSV, JSON, JUnit XML) and its summary;
- names: names the grader did not choose (students' folders and files), written as data.
"""
