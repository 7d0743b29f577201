"""Launch heuristics shared by backends (pure functions of the problem and the GPU)."""

from specs.problem import ProblemError


def pick_num_splits(problem, num_sms: int, programs: int, waves: int, min_tokens: int,
                    max_splits: int) -> int:
    """Split-K splits per sequence: enough programs for ``waves`` per SM given ``programs``
    programs per split (batch x KV heads x head chunks), but no split shorter than
    ``min_tokens`` (below that the partial write and the combine cost more than the extra
    parallelism saves), and at most ``max_splits``."""
    wanted = -(-waves * num_sms // programs)
    useful = -(-problem.max_seq_len // min_tokens)
    return max(1, min(wanted, useful, max_splits))


def resolve_num_splits(num_splits, problem, num_sms: int, programs: int, waves: int,
                       min_tokens: int, max_splits: int) -> int:
    """The split count a launcher uses: ``num_splits`` as given, checked by the rule below, or
    ``pick_num_splits``'s choice when it is None."""
    if num_splits is None:
        return pick_num_splits(problem, num_sms, programs, waves, min_tokens, max_splits)
    check_num_splits(num_splits)
    return num_splits


def check_num_splits(num_splits) -> None:
    if isinstance(num_splits, bool) or not isinstance(num_splits, int) or not 1 <= num_splits <= 4096:
        raise ProblemError(f"num_splits={num_splits!r}: must be an integer in [1, 4096]")


def tokens_per_split(problem, num_splits: int, tile: int) -> int:
    """Tokens per split, rounded up to whole tiles; splits past a sequence's end stay empty."""
    chunk = -(-problem.max_seq_len // num_splits)
    return -(-chunk // tile) * tile
