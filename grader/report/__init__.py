"""What a grading run says, and how it looks on the terminal:

- results: the result of grading one file, as plain data (written and read as JSON);
- inert: what the learner's code wrote (messages, prints), made harmless to print and to write;
- terminal: the grading report, as rich renderables;
- styles: the named styles and the console factory;
- console: the `kata` command's stdout and stderr consoles, created on first use.
"""
