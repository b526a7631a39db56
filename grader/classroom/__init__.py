"""`kata grade`: a whole class graded at once.

- batch: every student's kata files, in parallel, resumably, whatever a file does;
- workers: the pool of warm grading workers (each keeps an arena: grader/ARCHITECTURE.md);
- gradesheet: the grade sheet (CSV, JSON, JUnit XML) and its summary;
- feedback, report_html, gradescope: what students and the instructor read;
- names: names the grader did not choose (students' folders and files), written as data.
"""
