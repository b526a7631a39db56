"""Running learner code: the judge (checks, reference, results) and the contestants (the module
under test) in separate processes, with only data crossing between them. grader/ARCHITECTURE.md
draws the processes and says what each may see.

- arena: what a judge is given to run contestants with (the warm process, the drop folder, the
  fingerprint store, the file's cgroup), as one object;
- warm: starting the warm process (torch-free, so that its torch import overlaps the judge's);
- contestant: the warm process, the boxes it forks, the contestants they fork, and what a
  contestant answers;
- judge: the judge's side of them (box, spawn, call, deadline, end, how it ended);
- wire: the one format and vocabulary that crosses (JSON and safetensors, never a pickle);
- sandbox: bubblewrap around the warm process, and a contestant's world of its own;
- privileges: what a contestant gives up before it loads anything (capabilities, seccomp);
- staging: what of a student's folder a contestant gets;
- limits: what a contestant may take (memory, processes, file size);
- containment: the cgroup around one graded file's processes;
- source: loading a module from source text;
- child: a judge as a child process, with a deadline;
- interrupt: SIGINT and SIGTERM as one exception, and the exit status 130 or 143;
- grading: `kata check`'s judge run, and the result it reads back.
"""
