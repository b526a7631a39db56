"""The pytest side of a grading run, in the judge process (grader/ARCHITECTURE.md):

- plugin: the pytest plugin (`pytest --kata SLUG ...`; `-p grader.judging.plugin`), its options and
  fixtures, and `run_pytest(arguments, arena)`, the one way a caller hands a judge its arena;
- __main__: `kata check`'s judge process (`python -m grader.judging`);
- session: one grading run, tying the jobs below together, and what each check concluded;
- boxes: where the file's code runs (a box per file, hybrid and variant; a contestant per check);
- naming: the misconceptions whose variant fails a check exactly as the file does;
- locating: grading hybrids of the file and the reference (the search itself: localise);
- fingerprints: how each variant fails each check, remembered;
- items: a check as pytest collected it (its TODO, its titles, its code run on a contestant);
- expect: what checks use to compare the learner's module with the reference;
- outcomes: whatever happened during a check, as a status and an explanation;
- targets: the module a run checks (a file, the reference, the template, a misconception variant).
"""
