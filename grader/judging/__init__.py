"""The pytest side of a grading run, in the judge process:

- plugin: the pytest plugin (`pytest --kata SLUG ...`; `-p grader.judging.plugin`), its options and fixtures;
- session: one grading run: the module under test, the contestants, what each check concluded;
- expect: what checks use to compare the learner's module with the reference;
- outcomes: whatever happened during a check, as a status and an explanation;
- targets: the module a run checks (a file, the reference, the template, a misconception variant).
"""
