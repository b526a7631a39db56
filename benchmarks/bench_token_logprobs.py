"""Peak memory of per-token log-probs: log_softmax + gather against the memory-aware version.

    python benchmarks/bench_token_logprobs.py [--shape 8 512 32000] [--threads 2]

Three versions score input_ids[:, 1:] with logits[:, :-1] (B, T, V) float32:
- "log_softmax + gather": `logits[:, :-1].log_softmax(-1).gather(...)`, the plain form;
- "reference": the kata's `response_log_probs` (a torch.where on the inputs, then the above);
- "memory-aware": `gpu_labs.fast_logprobs.selective_log_probs`, logsumexp in chunks of rows.
Each runs in a fresh interpreter, once forward only and once forward + backward (of
sum(log-probs * weights), the logits a leaf), after a warm-up on a tiny batch. Memory is how far
the peak resident memory (VmHWM, reset just before) rose above the RSS with the logits already
made (Linux only): what the call adds beyond the logits. Forward + backward includes the
gradient of the logits, as large as the logits, which every version must return.
Target (issue 16): the memory-aware forward adds at most half of what log_softmax + gather adds.
"""

import argparse
import platform
import subprocess
import sys

import torch

VERSIONS = ("log_softmax + gather", "reference", "memory-aware")


def inputs(batch: int, length: int, vocab: int):
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(batch, length, vocab, generator=generator)  # (B, T, V)
    ids = torch.randint(0, vocab, (batch, length), generator=generator)  # (B, T)
    mask = torch.ones(batch, length, dtype=torch.bool)
    mask[:, : length // 4] = False  # a prompt
    return logits, ids, mask


def run(version: str, logits, ids, mask) -> torch.Tensor:
    """(B, T-1) log-probs of `version`."""
    if version == "reference":
        from reference.token_logprobs import response_log_probs

        return response_log_probs(logits, ids, mask)
    if version == "memory-aware":
        from gpu_labs.fast_logprobs import selective_log_probs

        return selective_log_probs(logits[:, :-1], ids[:, 1:])
    return logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def step(version: str, shape, backward: bool) -> None:
    logits, ids, mask = inputs(*shape)
    weights = torch.rand(shape[0], shape[1] - 1)
    if backward:
        logits.requires_grad_(True)
    with torch.set_grad_enabled(backward):
        out = run(version, logits, ids, mask)
        if backward:
            (out * weights).sum().backward()


def peak_growth_mb(version: str, shape, backward: bool, threads: int) -> float:
    """Run one call in a fresh interpreter; how far its peak RSS rose above the RSS before, in MB.

    Linux: writing 5 to /proc/self/clear_refs resets the peak (VmHWM) to the current RSS.
    """
    code = (
        "import sys, torch; sys.path.insert(0, 'benchmarks'); import bench_token_logprobs as b;"
        f" torch.set_num_threads({threads}); b.step({version!r}, (2, 8, 16), {backward});"
        f" logits, ids, mask = b.inputs(*{tuple(shape)}); w = torch.rand({shape[0]}, {shape[1] - 1});"
        f" logits.requires_grad_({backward});"
        " open('/proc/self/clear_refs', 'w').write('5'); before = b.status_kb('VmRSS');"
        f" out = b.run({version!r}, logits, ids, mask)"
        + (".mul(w).sum().backward()" if backward else "")
        + "; print((b.status_kb('VmHWM') - before) / 1024)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def status_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=3, default=(8, 512, 32000), metavar=("B", "T", "V"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    shape = tuple(args.shape)
    logits_mb = shape[0] * shape[1] * shape[2] * 4 / 2**20
    print(
        f"python {platform.python_version()}, torch {torch.__version__}, {args.threads} thread(s), "
        f"float32, B x T x V = {' x '.join(f'{n:,}' for n in shape)}, logits {logits_mb:,.0f} MB\n"
    )
    print("| version | forward +MB | forward + backward +MB |")
    print("|---|---|---|")
    forward = {}
    for version in VERSIONS:
        forward[version] = peak_growth_mb(version, shape, False, args.threads)
        both = peak_growth_mb(version, shape, True, args.threads)
        print(f"| {version} | {forward[version]:,.0f} | {both:,.0f} |")
    ratio = forward["memory-aware"] / forward["log_softmax + gather"]
    print(f"\nmemory-aware forward / log_softmax + gather forward: {ratio:.2f} (target <= 0.5)")
    return 0 if ratio <= 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
