"""Plots of compiled and trained pipelines (matplotlib, Agg, no pyplot).

- `plot_timeline(trace, png)`: a Chrome trace (`pipe-simulate trace=`,
  `pipe-train --trace`, `pipe-runner --trace`) as a Gantt chart: one row per
  track (device compute streams, host<->device copy engines, the host
  optimizer, links), bars coloured by action kind.
- `plot_partition(compiled, png)`: the block instances in graph order,
  coloured by device, with the stage boundaries, and one row per device
  showing which blocks it hosts (a device with several non-adjacent stages
  shows gaps).
- `plot_loss(log, png)`: training loss per step, evaluation points, the
  learning rate.

Each returns a small dict describing what it drew (for tests and
captions). Figures are made with `matplotlib.figure.Figure` directly, so
importing this module neither needs a display nor changes pyplot's backend.
"""

import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["plot_timeline", "plot_partition", "plot_loss", "load_trace",
           "KIND_COLORS"]

# Action kinds (first word of a trace event's name; send/recv keep their
# payload kind) and their colours.
KIND_COLORS = {
    "forward": "#4C72B0",
    "recompute": "#8172B2",
    "backward": "#DD8452",
    "backward_input": "#DD8452",
    "backward_weight": "#C44E52",
    "send activation": "#55A868",
    "send gradient": "#8C8C3A",
    "send": "#55A868",
    "recv": "#64B5CD",
    "reduce_grad": "#DA8BC3",
    "update": "#937860",
    "offload": "#7F7F7F",
    "prefetch": "#B0B0B0",
    "load": "#17BECF",
    "release": "#BCBD22",
}
_EXTRA_COLORS = ["#1F77B4", "#FF7F0E", "#2CA02C", "#D62728", "#9467BD",
                 "#8C564B", "#E377C2", "#17BECF", "#BCBD22", "#7F7F7F"]
_DEVICE_COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B2",
                  "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]


def _figure(width: float, height: float):
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), dpi=100)


def _save(figure, png: str) -> str:
    directory = os.path.dirname(os.path.abspath(png))
    os.makedirs(directory, exist_ok=True)
    figure.savefig(png, dpi=100, bbox_inches="tight")
    return png


# --------------------------------------------------------------------------
# Timeline
# --------------------------------------------------------------------------

def load_trace(trace) -> List[dict]:
    """The event list of a Chrome trace: a path, a JSON text, a dict with
    `traceEvents` or a list of events."""
    if isinstance(trace, (str, os.PathLike)):
        text = os.fspath(trace)
        if not text.lstrip().startswith(("{", "[")):
            if not os.path.isfile(text):
                raise FileNotFoundError(f"no trace file {text!r}")
            with open(text) as f:
                text = f.read()
        try:
            trace = json.loads(text)
        except ValueError as error:
            raise ValueError(f"not a Chrome trace (JSON): {error}") from None
    if isinstance(trace, dict):
        trace = trace.get("traceEvents")
    if not isinstance(trace, list):
        raise ValueError("not a Chrome trace: expected a list of events or "
                         "an object with 'traceEvents'")
    return trace


def _event_kind(name: str) -> str:
    words = name.split()
    if not words:
        return "?"
    if words[0] in ("send", "recv") and len(words) > 1 and \
            words[1] in ("activation", "gradient"):
        return f"{words[0]} {words[1]}"
    return words[0]


def _track_key(name: str, tid: int) -> Tuple:
    """Rows grouped by device (compute, then its copy engines), then the
    host optimizer, then links."""
    match = re.match(r"device (\d+) (\w+)", name)
    if match:
        order = {"compute": 0, "h2d": 1, "d2h": 2}.get(match.group(2), 3)
        return (0, int(match.group(1)), order, tid)
    if name.startswith("host"):
        return (1, 0, 0, tid)
    match = re.match(r"link (\d+)->(\d+)", name)
    if match:
        return (2, int(match.group(1)), int(match.group(2)), tid)
    return (3, 0, 0, tid)


_UNITS = {"s": 1e-6, "ms": 1e-3, "us": 1.0}


def _step_window(spans, step: int) -> Tuple[float, float]:
    """(after, before): the times between which the events of training run
    `step` start. A run ends with one update per stage (and steps-per-run);
    runs do not overlap, so run k is what starts after run k-1's last
    update ended and before run k's did (an evaluation run between them
    would fall into run k's window; the trainer evaluates after a step)."""
    updates = sorted((start + duration, name)
                     for events in spans.values()
                     for start, duration, kind, name in events
                     if kind == "update")
    if not updates:
        raise ValueError("the trace has no update events: no training step "
                         "to select")
    per_run = len({name for _, name in updates})
    runs = len(updates) // per_run
    if not 0 <= step < runs:
        raise ValueError(f"no step {step} in the trace: it has {runs} "
                         "training run(s), steps 0.." + str(runs - 1))
    before = updates[(step + 1) * per_run - 1][0]
    after = updates[step * per_run - 1][0] if step > 0 else float("-inf")
    return after, before + 1e-12


def plot_timeline(trace, png: str, title: Optional[str] = None,
                  process: Optional[str] = None, unit: str = "ms",
                  show_empty: bool = False, label_microbatches: bool = True,
                  max_time: Optional[float] = None,
                  step: Optional[int] = None) -> Dict[str, Any]:
    """Draws a Chrome trace as one row per track and writes `png`.

    trace: path, JSON text, dict or event list (see `load_trace`); both the
    simulator's (`--pipe-simulate=trace=`) and the runtime's
    (`pipe-train --trace`) traces work (their `ts`/`dur` are microseconds).
    process: only the process (schedule) whose name contains this; None =
    all (rows are then prefixed with the process name when there are
    several). unit: "ms" (default), "us" or "s" for the time axis.
    show_empty: keep tracks without events (compute tracks are always
    kept). max_time: clip the axis (in `unit`). step: only the events of
    that training run (0-based; the optimizer step when the schedule makes
    one step per run), e.g. one step of a long runtime trace; the axis then
    starts where the step does.

    Returns {"rows": [labels top to bottom], "kinds": {kind: events},
    "start" and "span": first start and last end in `unit`, "png": png}."""
    if unit not in _UNITS:
        raise ValueError(f"unit must be one of {sorted(_UNITS)}")
    events = load_trace(trace)
    scale = _UNITS[unit]
    processes: Dict[Any, str] = {}
    threads: Dict[Tuple[Any, Any], str] = {}
    spans: Dict[Tuple[Any, Any], List[Tuple[float, float, str, str]]] = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        pid, tid = event.get("pid", 0), event.get("tid", 0)
        if event.get("ph") == "M":
            name = (event.get("args") or {}).get("name", "")
            if event.get("name") == "process_name":
                processes[pid] = str(name)
            elif event.get("name") == "thread_name":
                threads[(pid, tid)] = str(name)
            continue
        if event.get("ph") != "X":
            continue
        name = str(event.get("name", ""))
        start = float(event.get("ts", 0)) * scale
        duration = float(event.get("dur", 0)) * scale
        spans.setdefault((pid, tid), []).append(
            (start, duration, _event_kind(name), name))
    if process is not None:
        keep = {pid for pid, name in processes.items() if process in name}
        if not keep:
            raise ValueError(f"no process named like {process!r} in the "
                             f"trace (it has: {sorted(processes.values())})")
        threads = {k: v for k, v in threads.items() if k[0] in keep}
        spans = {k: v for k, v in spans.items() if k[0] in keep}
    tracks = set(spans) | {k for k, v in threads.items()
                           if show_empty or "compute" in v}
    if not spans:
        raise ValueError("the trace has no events ('ph': 'X') to draw")
    if step is not None:
        begin, finish = _step_window(spans, step)
        spans = {track: kept for track, kept in (
            (t, [e for e in v if begin < e[0] < finish])
            for t, v in spans.items()) if kept}
    pids = sorted({pid for pid, _ in tracks}, key=str)
    several = len(pids) > 1

    def label(track):
        name = threads.get(track, f"track {track[1]}")
        if several:
            return f"{processes.get(track[0], track[0])}: {name}"
        return name

    ordered = sorted(tracks, key=lambda t: (pids.index(t[0]),
                                            _track_key(threads.get(t, ""),
                                                       t[1] if isinstance(
                                                           t[1], int) else 0)))
    rows = [label(t) for t in ordered]
    kinds: Dict[str, int] = {}
    extra = iter(_EXTRA_COLORS * 4)
    colors = dict(KIND_COLORS)
    end, first = 0.0, None
    for track in ordered:
        for start, duration, kind, _ in spans.get(track, []):
            kinds[kind] = kinds.get(kind, 0) + 1
            end = max(end, start + duration)
            first = start if first is None else min(first, start)
            if kind not in colors:
                colors[kind] = next(extra, "#333333")
    # A whole trace starts at 0; one step of it where its events start.
    origin = 0.0 if step is None else (first or 0.0)
    if max_time is not None:
        end = min(end, max_time)

    figure = _figure(12, 1.2 + 0.42 * len(rows))
    axes = figure.add_subplot(1, 1, 1)
    compute_events = sum(1 for t in ordered for s in spans.get(t, [])
                         if "compute" in threads.get(t, ""))
    for row, track in enumerate(ordered):
        y = len(ordered) - 1 - row
        by_kind: Dict[str, List[Tuple[float, float]]] = {}
        is_compute = "compute" in threads.get(track, "")
        for start, duration, kind, name in spans.get(track, []):
            by_kind.setdefault(kind, []).append((start, duration))
            if (label_microbatches and is_compute and compute_events <= 400
                    and end > origin
                    and duration > 0.012 * (end - origin) and start < end):
                match = re.search(r"\bmb (\d+)", name)
                if match:
                    axes.text(start + duration / 2, y, match.group(1),
                              ha="center", va="center", fontsize=7,
                              color="white", clip_on=True)
        for kind, bars in by_kind.items():
            # Separating edges only while bars are wide enough to show them.
            axes.broken_barh(bars, (y - 0.38, 0.76), facecolors=colors[kind],
                             edgecolor="white", label=kind,
                             linewidth=0.3 if compute_events <= 400 else 0)
    axes.set_yticks(range(len(rows)))
    axes.set_yticklabels(list(reversed(rows)))
    axes.set_ylim(-0.6, len(rows) - 0.4)
    axes.set_xlim(origin, origin + (end - origin) * 1.01
                  if end > origin else origin + 1)
    axes.set_xlabel(f"time ({unit})")
    axes.set_ylabel("stream")
    axes.grid(axis="x", linestyle=":", linewidth=0.5)
    order = [k for k in KIND_COLORS if k in kinds] + \
        sorted(k for k in kinds if k not in KIND_COLORS)
    from matplotlib.patches import Patch
    axes.legend(handles=[Patch(color=colors[k], label=f"{k} ({kinds[k]})")
                         for k in order],
                title="action", loc="upper left", bbox_to_anchor=(1.01, 1),
                fontsize=8, title_fontsize=8, frameon=False)
    if title is None:
        names = [processes[p] for p in pids if p in processes]
        title = ", ".join(names) if names else "timeline"
    if step is not None:
        title += f" (step {step})"
    axes.set_title(title)
    _save(figure, png)
    return {"rows": rows, "kinds": kinds, "start": origin, "span": end,
            "png": png}


# --------------------------------------------------------------------------
# Partition
# --------------------------------------------------------------------------

def _scheduled(source):
    """(ScheduledModule, CompileResult or None)."""
    from .api import CompileResult, ScheduledModule, parse_scheduled
    if isinstance(source, CompileResult):
        return source.module, source
    if isinstance(source, ScheduledModule):
        return source, None
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if "pipe.graph" not in text:
            if not os.path.isfile(text):
                raise FileNotFoundError(f"no scheduled module {text!r}")
            with open(text) as f:
                text = f.read()
        return parse_scheduled(text), None
    raise TypeError("expected a CompileResult, a scheduled .mlir path or "
                    f"its text, not {type(source).__name__}")


def plot_partition(source, png: str, title: Optional[str] = None,
                   widths: str = "cost", placement: Optional[str] = None
                   ) -> Dict[str, Any]:
    """Draws a placement: block instances in graph order (width
    proportional to forward + backward FLOPs with widths="cost", equal with
    "uniform") coloured by device, stage boundaries as dashed lines with
    the stage names, and one row per device with the blocks it hosts (a
    device holding several non-adjacent stages, Mixed-Pipe or interleaved,
    shows separate spans).

    source: a `CompileResult`, a scheduled module's path or text.
    placement: which `pipe.placement` (default: the first).

    Returns {"devices": {device: [stages]}, "blocks": [names],
    "boundaries": [x of each stage boundary], "png": png}."""
    module, compiled = _scheduled(source)
    if not module.placements:
        raise ValueError("the module has no pipe.placement: partition or "
                         "place it first (compile() does)")
    chosen = module.placements[0]
    if placement is not None:
        matches = [p for p in module.placements if p.name == placement]
        if not matches:
            raise ValueError(f"no placement @{placement}")
        chosen = matches[0]
    where = {}
    for index, stage in enumerate(chosen.stages):
        for name in stage.blocks:
            where[name] = (stage, index)
    blocks = [b for b in module.blocks if b.name in where]
    if not blocks:
        raise ValueError(f"placement @{chosen.name} places none of the "
                         "graph's block instances")
    costs = [b.forward_flops + b.backward_flops for b in blocks]
    if widths == "cost" and sum(costs) > 0:
        # Keep cheap blocks (embeddings) wide enough to read.
        floor = 0.4 * sum(costs) / len(costs)
        sizes = [max(c, floor) for c in costs]
    elif widths in ("cost", "uniform"):
        sizes = [1.0] * len(blocks)
    else:
        raise ValueError("widths must be 'cost' or 'uniform'")
    total = float(sum(sizes))
    sizes = [s / total for s in sizes]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]

    devices = chosen.devices
    device_stages: Dict[int, List[str]] = {d: [] for d in range(devices)}
    for stage in chosen.stages:
        device_stages.setdefault(stage.device, []).append(stage.name)
    color = {d: _DEVICE_COLORS[d % len(_DEVICE_COLORS)]
             for d in device_stages}

    from matplotlib.patches import Patch, Rectangle
    figure = _figure(max(8.0, 0.55 * len(blocks) + 3),
                     2.6 + 0.45 * len(device_stages))
    grid = figure.add_gridspec(2, 1, height_ratios=[1.3, 0.5 * max(
        1, len(device_stages))], hspace=0.08)
    top = figure.add_subplot(grid[0])
    bottom = figure.add_subplot(grid[1], sharex=top)
    rotate = len(blocks) > 6
    for block, x, w in zip(blocks, starts, sizes):
        stage, _ = where[block.name]
        top.add_patch(Rectangle((x, 0), w, 1, facecolor=color[stage.device],
                                edgecolor="white", linewidth=1.0))
        top.text(x + w / 2, 0.5, block.name, ha="center", va="center",
                 rotation=90 if rotate or w < 0.1 else 0, fontsize=8,
                 color="white", clip_on=True)
    # Stage boundaries and names.
    boundaries = []
    for i in range(1, len(blocks)):
        if where[blocks[i].name][0] is not where[blocks[i - 1].name][0]:
            boundaries.append(starts[i])
            for axes in (top, bottom):
                axes.axvline(starts[i], color="black", linestyle="--",
                             linewidth=1.0)
    spans: List[Tuple[str, float, float, int]] = []  # stage, x0, x1, device
    for block, x, w in zip(blocks, starts, sizes):
        stage, _ = where[block.name]
        if spans and spans[-1][0] == stage.name and \
                abs(spans[-1][2] - x) < 1e-12:
            spans[-1] = (stage.name, spans[-1][1], x + w, stage.device)
        else:
            spans.append((stage.name, x, x + w, stage.device))
    for name, x0, x1, device in spans:
        top.text((x0 + x1) / 2, 1.04, f"{name} (dev {device})",
                 ha="center", va="bottom", fontsize=8)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1.25)
    top.set_yticks([])
    top.tick_params(labelbottom=False)
    top.spines[["top", "right", "left"]].set_visible(False)

    # One row per device: its blocks at their graph positions.
    order = sorted(device_stages)
    for row, device in enumerate(order):
        y = len(order) - 1 - row
        for name, x0, x1, d in spans:
            if d != device:
                continue
            bottom.add_patch(Rectangle((x0, y - 0.35), x1 - x0, 0.7,
                                       facecolor=color[device],
                                       edgecolor="black", linewidth=0.5))
            bottom.text((x0 + x1) / 2, y, name, ha="center", va="center",
                        fontsize=8, color="white", clip_on=True)
    bottom.set_yticks(range(len(order)))
    bottom.set_yticklabels([f"device {d}" for d in reversed(order)])
    bottom.set_ylim(-0.6, len(order) - 0.4)
    bottom.set_xlabel("block instances in graph order (width: "
                      + ("forward + backward FLOPs" if widths == "cost"
                         and sum(costs) > 0 else "one per block") + ")")
    bottom.set_xticks([x + w / 2 for x, w in zip(starts, sizes)])
    bottom.set_xticklabels([b.name for b in blocks],
                           rotation=45 if rotate else 0, ha="right"
                           if rotate else "center", fontsize=8)
    figure.legend(handles=[Patch(color=color[d],
                                 label=f"device {d}: "
                                 + (", ".join(device_stages[d]) or "idle"))
                           for d in order],
                  loc="upper left", bbox_to_anchor=(0.91, 0.88),
                  fontsize=8, frameon=False)
    if title is None:
        title = f"placement @{chosen.name}: {len(chosen.stages)} stages on " \
                f"{devices} devices"
        schedules = [s for s in module.schedules
                     if s.placement == chosen.name and not s.forward_only]
        if schedules:
            title += f", {schedules[0].kind}, {schedules[0].microbatches} " \
                     "micro-batches"
        if compiled is not None and compiled.step_time_s:
            title += f"; simulated step {_seconds(compiled.step_time_s)}"
    top.set_title(title)
    _save(figure, png)
    return {"devices": {d: device_stages[d] for d in order},
            "blocks": [b.name for b in blocks], "boundaries": boundaries,
            "png": png}


def _seconds(value: float) -> str:
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6),
                         ("ns", 1e-9)):
        if value >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value / 1e-12:.3g} ps"


# --------------------------------------------------------------------------
# Loss
# --------------------------------------------------------------------------

def _log_entries(log) -> List[dict]:
    if hasattr(log, "log") and hasattr(log, "losses"):  # TrainResult
        entries = log.log or [{"step": i + 1, "loss": v}
                              for i, v in enumerate(log.losses)]
        return entries
    if isinstance(log, (str, os.PathLike)):
        path = os.fspath(log)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no log file {path!r}")
        entries = []
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    raise ValueError(f"{path}:{number}: not a JSON line "
                                     "(pipe-train --log-json)") from None
        return entries
    if isinstance(log, Sequence):
        entries = []
        for index, item in enumerate(log):
            if isinstance(item, dict):
                entries.append(item)
            else:
                entries.append({"step": index + 1, "loss": float(item)})
        return entries
    raise TypeError("expected a --log-json path, a TrainResult or a list of "
                    f"losses / log entries, not {type(log).__name__}")


def plot_loss(log, png: str, title: Optional[str] = None,
              reference: Optional[Sequence[float]] = None,
              reference_label: str = "reference", label: str = "pipe-train",
              eval_points: Optional[Sequence[Tuple[int, float]]] = None,
              show_lr: bool = True, log_scale: bool = False
              ) -> Dict[str, Any]:
    """Draws the training loss per step and the evaluation points.

    log: a `--log-json` path, a `TrainResult`, a list of its entries
    (dicts with step, loss and optionally lr, eval_loss) or of losses.
    reference: another loss curve over the same steps (e.g. PyTorch's),
    drawn dashed. eval_points: (step, loss) pairs to add to the log's own
    `eval_loss` entries. show_lr: the learning rate on a second axis when
    the log has it and it changes.

    Returns {"steps": [...], "losses": [...], "eval": [(step, loss)],
    "png": png}."""
    entries = _log_entries(log)
    pairs = [(int(e.get("step", i + 1)), float(e["loss"]))
             for i, e in enumerate(entries) if "loss" in e]
    if not pairs:
        raise ValueError("no losses to plot (empty log)")
    steps = [s for s, _ in pairs]
    losses = [v for _, v in pairs]
    evals = [(int(e["step"]), float(e["eval_loss"])) for e in entries
             if "eval_loss" in e]
    evals += [(int(s), float(v)) for s, v in (eval_points or [])]
    lrs = [(int(e.get("step", i + 1)), float(e["lr"]))
           for i, e in enumerate(entries) if "lr" in e]

    figure = _figure(8, 4.5)
    axes = figure.add_subplot(1, 1, 1)
    marker = "o" if len(steps) <= 40 else None
    axes.plot(steps, losses, color="#4C72B0", marker=marker, markersize=3,
              linewidth=1.5, label=f"{label} train loss")
    if reference is not None:
        ref = [float(v) for v in reference]
        axes.plot(steps[:len(ref)], ref[:len(steps)], color="#C44E52",
                  linestyle="--", linewidth=1.2,
                  label=f"{reference_label} train loss")
    if evals:
        axes.plot([s for s, _ in evals], [v for _, v in evals],
                  color="#55A868", marker="D", linestyle=":", markersize=6,
                  label="eval loss")
    axes.set_xlabel("optimizer step")
    from matplotlib.ticker import MaxNLocator
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel("loss")
    if log_scale:
        axes.set_yscale("log")
    axes.grid(linestyle=":", linewidth=0.5)
    handles, labels = axes.get_legend_handles_labels()
    if show_lr and lrs and len({v for _, v in lrs}) > 1:
        twin = axes.twinx()
        line, = twin.plot([s for s, _ in lrs], [v for _, v in lrs],
                          color="#937860", linewidth=1.0, alpha=0.7,
                          label="learning rate")
        twin.set_ylabel("learning rate")
        twin.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
        handles.append(line)
        labels.append("learning rate")
    axes.legend(handles, labels, loc="upper right", fontsize=8)
    axes.set_title(title or f"training loss ({len(steps)} steps)")
    _save(figure, png)
    return {"steps": steps, "losses": losses, "eval": evals, "png": png}
