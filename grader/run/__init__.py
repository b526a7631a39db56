"""Running learner code: the judge (checks, reference, results) and the contestant (the module
under test) in separate processes, with only data crossing between them (see DESIGN.md, Grading).

- wire: the format that crosses (JSON and safetensors, never a pickle);
- contestant: the warm process and the contestants it forks;
- judge: the judge's side of them (spawn, call, deadline, end);
- source: loading a module from source text.
"""
