"""Several processes for any lab: the ranks, the process group, and the few collectives a lab needs.

torchrun and `accelerate launch` (which starts torchrun's launcher for --multi_gpu) start one
process per device and set, in each one's environment:

    WORLD_SIZE   how many processes in all                     (unset or 1: a single process)
    RANK         this process's index, 0 .. WORLD_SIZE - 1     (rank 0 is the writer)
    LOCAL_RANK   its index on this machine: the CUDA device it drives
    MASTER_ADDR, MASTER_PORT   where the ranks meet; init_process_group reads them ("env://")

`join_process_group` joins the group when WORLD_SIZE > 1 (nccl on CUDA, gloo on CPU; not for a
dry run), `leave_process_group` leaves it (then a rank ends its process with os._exit: see
gpu_labs.train_grpo.script.exit_without_teardown). How a lab splits its work: with P prompts and
G answers each, group-contiguous (row r*G + j belongs to prompt r), rank k takes the contiguous
prompts k*P/W .. (k+1)*P/W - 1 (W = WORLD_SIZE, P a multiple of W), so every group, and with it
its group-relative advantage, lives on one rank and needs no communication. What crosses ranks:
metric sums (`all_reduce_sums`, float64), small objects (`all_gather`), gradients (under
DistributedDataParallel) and one start signal from rank 0 (`start_signal`). Only rank 0
(`Ranks.writer`) writes files or prints. In a single process the collectives do nothing (the
sums and the gather give back the local values); torch is imported inside the helpers, never
when this module is (so `kata lab list` stays free of torch).
"""

import os
from dataclasses import dataclass


@dataclass
class Ranks:
    """This process's place among the ranks: (0, 1) in a single process."""

    rank: int = 0
    world_size: int = 1

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def writer(self) -> bool:
        return self.rank == 0


def world_size_from_env() -> int:
    """WORLD_SIZE as torchrun / accelerate set it; 1 without a launcher."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def current_ranks() -> Ranks:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return Ranks(dist.get_rank(), dist.get_world_size())
    return Ranks()


def join_process_group(run_mode: str) -> Ranks:
    """Under torchrun / accelerate (WORLD_SIZE > 1): init the process group from the environment."""
    world_size = world_size_from_env()
    if world_size <= 1 or run_mode == "dry_run":
        return Ranks(int(os.environ.get("RANK", "0")), 1) if world_size > 1 else Ranks()
    import torch
    import torch.distributed as dist

    if run_mode == "real_gpu":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend="nccl" if run_mode == "real_gpu" else "gloo")
    return current_ranks()


def leave_process_group(ranks: Ranks) -> None:
    """The counterpart of join_process_group (nothing to do in a single process)."""
    if ranks.distributed:
        import torch.distributed as dist

        dist.destroy_process_group()


def all_reduce_sums(values: dict, ranks: Ranks, device) -> dict:
    """Each value summed over the ranks (float64)."""
    if not ranks.distributed:
        return dict(values)
    import torch
    import torch.distributed as dist

    names = sorted(values)
    tensor = torch.tensor([float(values[name]) for name in names], dtype=torch.float64, device=device)
    dist.all_reduce(tensor)
    return dict(zip(names, tensor.tolist()))


def all_gather(value, ranks: Ranks) -> list:
    """[value of rank 0, value of rank 1, ...] (just [value] in one process)."""
    if not ranks.distributed:
        return [value]
    import torch.distributed as dist

    gathered = [None] * ranks.world_size
    dist.all_gather_object(gathered, value)
    return gathered


def start_signal(ranks: Ranks, go: bool = True) -> bool:
    """Rank 0 tells the others whether the run starts (its run folder claimed) or is aborted."""
    if not ranks.distributed:
        return True
    import torch.distributed as dist

    message = [go if ranks.writer else None]
    dist.broadcast_object_list(message, src=0)
    return bool(message[0])


class Aborted(Exception):
    """Rank 0 refused the run before it started; the other ranks stop quietly."""
