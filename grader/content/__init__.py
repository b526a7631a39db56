"""The katas' content, read from `katas/` and `reference/` (never torch):

- catalogue: each kata's metadata, lessons and misconceptions;
- render: the learner's template, the solution and the misconception variants, from a reference;
- i18n: the language choice and the interface phrases in en and zh;
- drill: drills, a reference with some positions blanked, to be typed back;
- quiz: the concept questions of a kata, graded one answer at a time.
"""
