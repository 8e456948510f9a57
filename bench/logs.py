"""The logs the scenarios share, simulated once at the start of a run."""

from __future__ import annotations

from bench.context import Context, Logs, say
from bench.process import run_cli


def simulate_logs(ctx: Context) -> Logs:
    """Simulates the main, edition-2 and sweep logs and replays two of them for their verdicts."""
    s = ctx.sizes
    log = ctx.work / "main.jsonl"
    say(f"simulating {s.games} games")
    # The main log is edition 1's (``--rules edition1`` writes what edition 1's ``--rules
    # random`` did, byte for byte), so its figure compares across editions.
    ed1 = ["--rules", "edition1"]
    run_cli(["simulate", "--games", str(s.games), "--seed", "7", *ed1, "--output", str(log)])
    verdicts_file = ctx.work / "main.verdicts.jsonl"
    run_cli(["replay", str(log), "--output", str(verdicts_file), "--workers", "1"])
    ctx.note(f"uv run referee simulate --games {s.games} --seed 7 --rules edition1 --output {log}")
    ed2_log = ctx.work / "edition2.jsonl"
    run_cli(["simulate", "--games", str(s.games), "--seed", "7", "--rules", "random", "--output",
             str(ed2_log)])  # fmt: skip
    ed2_verdicts = ctx.work / "edition2.verdicts.jsonl"
    run_cli(["replay", str(ed2_log), "--output", str(ed2_verdicts), "--workers", "1"])
    ctx.note(
        f"uv run referee simulate --games {s.games} --seed 7 --rules random --output {ed2_log}"
    )
    sweep_log = ctx.work / "sweep.jsonl"
    run_cli(
        [
            "simulate",
            "--games",
            str(s.sweep_games),
            "--seed",
            "11",
            *ed1,
            "--output",
            str(sweep_log),
        ]
    )
    sweep_verdicts = ctx.work / "sweep.verdicts.jsonl"
    run_cli(["replay", str(sweep_log), "--output", str(sweep_verdicts), "--workers", "1"])
    ctx.note(
        f"uv run referee simulate --games {s.sweep_games} --seed 11 --rules edition1"
        f" --output {sweep_log}"
    )
    return Logs(
        main=log,
        main_verdicts=verdicts_file,
        edition2=ed2_log,
        edition2_verdicts=ed2_verdicts,
        sweep=sweep_log,
        sweep_verdicts=sweep_verdicts,
    )
