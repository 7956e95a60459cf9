"""The one timer of the Python benches (layers, epilogue, moe, zentorch):
calls timed in turn with time.perf_counter, after a warm-up, reported as
min and median (performance.md: min and p50 of every timing)."""
import statistics
import time


def time_interleaved(calls, min_time=0.0, min_reps=3, max_reps=2000,
                     budget_s=None, rotate=False):
    """{name: [seconds]} of `calls` ({name: fn}): one warm-up round, then
    rounds calling every fn once, until each ran min_reps times and
    min_time has passed, at most max_reps rounds; with budget_s, no round
    starts past it once 3 are in. Interleaving keeps a shared machine's
    drift out of the ratios; `rotate` starts each round one name later."""
    names = list(calls)
    for n in names:
        calls[n]()
    times = {n: [] for n in names}
    start = time.perf_counter()
    rounds = 0
    while rounds < max_reps:
        elapsed = time.perf_counter() - start
        if rounds >= min_reps and elapsed >= min_time:
            break
        if budget_s is not None and rounds >= 3 and elapsed > budget_s:
            break
        for j in range(len(names)):
            n = names[(rounds + j) % len(names)] if rotate else names[j]
            t0 = time.perf_counter()
            calls[n]()
            times[n].append(time.perf_counter() - t0)
        rounds += 1
    return times


def min_p50(times):
    """(min, median) of a list of seconds."""
    return min(times), statistics.median(times)


def timeit(fn, min_time, min_reps=3, max_reps=2000):
    """(min, p50) seconds of fn() after one warm-up call, repeated until
    min_time has passed and at least min_reps calls were timed. A call of a
    second or more (torch's bf16 linear at large M on CPUs without AVX-512
    BF16) is compute-bound, so its warm-up counts as a sample and only one
    more call is made, to keep the run within minutes."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if first >= 1.0:
        t0 = time.perf_counter()
        fn()
        second = time.perf_counter() - t0
        return min(first, second), max(first, second)
    return min_p50(time_interleaved({"fn": fn}, min_time, min_reps,
                                    max_reps)["fn"])
