"""Reference solutions, one module per kata: written to be read, and the one source of truth.

Each step a learner writes is enclosed in `# TODO N` / `# END TODO N` markers; the blank template,
the misconception variants and the drills are all rendered from these files (see grader.content.render).
"""
