"""Running learner code: the judge (checks, reference, results) and the contestant (the module
under test) in separate processes, with only data crossing between them (see DESIGN.md, Grading).

- wire: the format that crosses (JSON and safetensors, never a pickle);
- contestant: the warm process and the contestants it forks;
- judge: the judge's side of them (spawn, call, deadline, end);
- source: loading a module from source text;
- limits: what a contestant may take (memory, processes);
- sandbox: the OS sandbox around contestants;
- warm: starting the warm process (torch-free, so the judge can start it first);
- containment: the cgroup box around one graded file's processes;
- child: the judge as a child process, with a deadline;
- grading: `kata check`'s judge run (pytest with grader.judging.plugin) and the result it reads back.
"""
