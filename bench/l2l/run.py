#!/usr/bin/env python3
"""L2L benchmark: the BERT-Large-shaped encoder of docs/hardware.md trained
layer to layer (`l2l` and its constant-memory variant) at several depths
and batch sizes, against PyTorch eager on the same machine. docs/l2l-bench.md
describes the method and records the results.

Two halves, because the GPU machine has no MLIR:

  run.py prepare --out DIR [--target cuda|cpu] ...   (here: export + compile)
  run.py measure --artifacts DIR --out OUT ...       (there: weights, runs,
                                                      PyTorch, report)

`prepare` exports encoder.Encoder with pipe_mlir (shape only), forms one
block per layer, differentiates, places one stage per block on one device,
schedules `l2l` (plain and `constant-memory=true`) and lowers it: for
`--target cuda` to DIR/<case>/program.o (kernels for --chip, cuBLAS GEMMs
at --gemm-precision), for `--target cpu` to program.so. `measure` makes
the weights from the PyTorch module (PyTorch's default initialisation,
seed 0) and random input, runs pipe-runner(-cuda) with --profile on each
case, times PyTorch eager (bf16 autocast on CUDA) and writes
OUT/results.json and OUT/report.md (tables with the roofline breakdown).

`--preset tiny` runs the whole thing in seconds on the CPU (the pytest
test_l2l_bench.py does).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import encoder  # noqa: E402

PRESETS = {"bert-large": encoder.BERT_LARGE, "tiny": encoder.TINY,
           # BERT-Large layers on 4-token sequences: the parameter server's
           # host-side costs on a CPU, where full sequences take minutes.
           "bert-large-seq4": dict(encoder.BERT_LARGE, seq=4)}
# Measured H200 figures of docs/hardware.md (the roofline of the breakdown).
PEAK_FLOPS = 713e12
COPY_BYTES_PER_S = 55e9


def csv_ints(text):
    return [int(v) for v in text.split(",") if v]


# Variants: the pipe-schedule options of each, and its optimizer steps per
# run (overlapped and delayed host updates need several).
VARIANTS = {
    "plain": ("constant-memory=false", 1),
    "constant-memory": ("constant-memory=true", 1),
    "overlap": ("constant-memory=true host-update=overlap steps=4", 4),
    "delayed": ("constant-memory=true host-update=delayed steps=4", 4),
}


def case_name(layers, batch, variant):
    return f"L{layers}-b{batch}-{variant}"


def run(cmd, **kwargs):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


#===--- prepare (build machine) ------------------------------------------===#

def export_blocks(args, layers, microbatch, work):
    """The differentiated block graph of the encoder at this depth and
    micro-batch (cached): export, lift, form blocks, differentiate. Returns
    the path and the number of block instances (one L2L stage each)."""
    path = os.path.join(work, f"enc-L{layers}-mb{microbatch}.blocks.mlir")
    if not os.path.exists(path):
        import torch
        from pipe_mlir.export import export_module
        # On the meta device: shapes only, no weights made or layers run
        # (the IR is the same; a 96-layer export takes a second).
        shape = PRESETS[args.preset]
        model = encoder.Encoder(layers, **shape).to("meta").eval()
        x = encoder.example_input(shape, microbatch).to("meta")
        t0 = time.perf_counter()
        exported = export_module(model, (x,))
        raw = os.path.join(work, f"enc-L{layers}-mb{microbatch}.mlir")
        with open(raw, "w") as f:
            f.write(exported.mlir("none"))
        print(f"exported {layers} layers in {time.perf_counter() - t0:.1f} s",
              flush=True)
        # Blocks are formed in the same run as the import: they are named
        # after the exporter's locations (docs/python.md).
        run([os.path.join(args.bin, "pipe-opt"), raw, "--pipe-check-input",
             "--pipe-lift-params=init-missing=true",
             "--pipe-form-blocks=granularity=layer", "--pipe-differentiate",
             "-o", path + ".tmp"])
        os.replace(path + ".tmp", path)
    with open(path) as f:
        instances = sum(line.count("pipe.run ") for line in f)
    return path, instances


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "models")
    os.makedirs(work, exist_ok=True)
    shape = PRESETS[args.preset]
    for layers in csv_ints(args.layers):
        blocks, instances = export_blocks(args, layers, args.microbatch, work)
        for batch in csv_ints(args.batches):
            if batch % args.microbatch:
                sys.exit(f"batch {batch} is not a multiple of the micro-batch "
                         f"{args.microbatch}")
            microbatches = batch // args.microbatch
            for variant in args.variants.split(","):
                if variant not in VARIANTS:
                    sys.exit(f"unknown variant '{variant}' (expected one of "
                             f"{', '.join(VARIANTS)})")
                options, steps_per_run = VARIANTS[variant]
                name = case_name(layers, batch, variant)
                case = os.path.join(args.out, name)
                os.makedirs(case, exist_ok=True)
                schedule = (f"--pipe-schedule=kind=l2l microbatches="
                            f"{microbatches} {options}")
                passes = [f"--pipe-place=devices=1 stages-per-device="
                          f"{instances}", schedule, "--pipe-verify-schedule"]
                scheduled = os.path.join(case, "scheduled.mlir")
                run([os.path.join(args.bin, "pipe-opt"), blocks, *passes,
                     "-o", scheduled])
                t0 = time.perf_counter()
                if args.target == "cpu":
                    run([os.path.join(args.bin, "pipe-compile"), scheduled,
                         "-O", str(args.opt_level),
                         "-o", os.path.join(case, "program.so")])
                else:
                    lowered = os.path.join(case, "program.llvm.mlir")
                    run([os.path.join(args.bin, "pipe-opt"), scheduled,
                         "--pipe-lower-to-host",
                         f"--pipe-host-to-cuda=chip={args.chip} "
                         f"gemm-precision={args.gemm_precision}",
                         "-o", lowered])
                    ll = os.path.join(case, "program.ll")
                    run([os.path.join(args.llvm_bin, "mlir-translate"),
                         "--mlir-to-llvmir", lowered, "-o", ll])
                    run([os.path.join(args.llvm_bin, "llc"),
                         f"-O{min(args.opt_level, 3)}",
                         "-filetype=obj", "-relocation-model=pic", ll, "-o",
                         os.path.join(case, "program.o")])
                    os.remove(lowered)
                    os.remove(ll)
                os.remove(scheduled)
                config = {"preset": args.preset, "layers": layers,
                          "batch": batch, "microbatch": args.microbatch,
                          "microbatches": microbatches, "variant": variant,
                          "steps_per_run": steps_per_run,
                          "target": args.target, "chip": args.chip,
                          "gemm_precision": args.gemm_precision,
                          "compile_s": round(time.perf_counter() - t0, 1),
                          "parameters": encoder.parameter_count(layers, shape)}
                with open(os.path.join(case, "case.json"), "w") as f:
                    json.dump(config, f, indent=1)
    print(f"prepared under {args.out}")


#===--- measure (GPU machine, or the CPU with --preset tiny) -------------===#

def weights_file(config, work):
    """PyTorch's initialisation of the model, as the compiled program's
    weights (parameter names = state-dict names)."""
    path = os.path.join(work, f"w-{config['preset']}-L{config['layers']}"
                              ".safetensors")
    if not os.path.exists(path):
        from pipe_mlir.safetensors import save_file
        model = encoder.build(config["layers"], PRESETS[config["preset"]])
        save_file(dict(model.named_parameters()), path + ".tmp")
        os.replace(path + ".tmp", path)
    return path


def data_file(config, work):
    """input0 [micro-batches, seq, micro-batch, d]: one step's input."""
    shape = PRESETS[config["preset"]]
    path = os.path.join(work, f"x-{config['preset']}-b{config['batch']}-"
                              f"mb{config['microbatch']}.safetensors")
    if not os.path.exists(path):
        import torch
        from pipe_mlir.safetensors import save_file
        x = encoder.example_input(shape, config["batch"])
        rows = torch.stack(x.split(config["microbatch"], dim=1))
        save_file({"input0": rows.contiguous()}, path + ".tmp")
        os.replace(path + ".tmp", path)
    return path


def run_case(args, case, config, work):
    program = os.path.join(case, "program.so")
    if not os.path.exists(program):
        obj = os.path.join(case, "program.o")
        program = os.path.join(work, os.path.basename(case) + ".so")
        run(["c++", "-shared", "-o", program, obj])
    profile = os.path.join(work, os.path.basename(case) + ".profile.json")
    log = os.path.join(work, os.path.basename(case) + ".log.jsonl")
    # A schedule of several steps per run: two runs at least, the first
    # left out of the profile as the warm-up.
    per_run = config.get("steps_per_run", 1)
    steps = args.steps
    runner_args = list(args.runner_args)
    if per_run > 1:
        steps = per_run * max(2, -(-args.steps // per_run))
        runner_args += ["--profile-skip", str(per_run)]
    # Delayed updates load the previous weight version, which only the f32
    # masters keep (the bf16 shadow holds the latest): f32 transfers.
    if config["variant"] == "delayed" and "--ps-transfer" in runner_args:
        runner_args[runner_args.index("--ps-transfer") + 1] = "f32"
        config["ps_transfer"] = "f32"
    cmd = [args.runner, program, "--weights", weights_file(config, work),
           "--data", data_file(config, work), "--steps", str(steps),
           "--optimizer", "adamw", "--lr", "1e-4", "--log-every", "1",
           "--log-json", log, "--profile", profile, *runner_args]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=args.case_timeout)
    print(out.stdout, flush=True)
    if out.returncode != 0:
        tail = out.stdout.strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"exit {out.returncode}: {tail[0]}")
    with open(profile) as f:
        result = json.load(f)
    with open(log) as f:
        result["first_loss"] = json.loads(f.readline())["loss"]
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    result["command"] = " ".join(os.path.basename(c) if c == program else c
                                 for c in cmd)
    return result


def torch_eager(config, device, steps):
    """PyTorch eager on the same model and batch: AdamW, bf16 autocast on
    CUDA (fp32 on the CPU); ms per step after warm-up and the peak of
    torch.cuda.max_memory_allocated. Also the fp32 loss of the initial
    weights on the batch: the compiled program's first logged loss (the
    mean of its micro-batches' means) must match it."""
    import torch
    shape = PRESETS[config["preset"]]
    model = encoder.build(config["layers"], shape).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = encoder.example_input(shape, config["batch"]).to(device)
    cuda = device == "cuda"
    with torch.no_grad():
        first_loss = float(model(x))

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=torch.bfloat16,
                            enabled=cuda):
            loss = model(x)
        loss.backward()
        optimizer.step()

    for _ in range(3):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / steps
    peak = torch.cuda.max_memory_allocated() if cuda else None
    del model, optimizer, x
    if cuda:
        torch.cuda.empty_cache()
    return {"step_ms": ms, "peak_bytes": peak, "first_loss": first_loss}


def roofline(config):
    """Lower bounds at the H200's measured peaks: GEMM FLOPs at 713
    TFLOP/s; the copies at 55 GB/s each way (loads in the transfer dtype,
    twice per step; gradients once; constant memory also offloads and
    prefetches each layer boundary per micro-batch, fp32)."""
    shape = PRESETS[config["preset"]]
    params = encoder.parameter_count(config["layers"], shape)
    flops = encoder.flops_per_step(config["layers"], shape, config["batch"])
    width = 2 if config.get("ps_transfer") == "bf16" else 4
    h2d = 2 * params * width
    d2h = params * width
    if config["variant"] != "plain":
        boundary = shape["seq"] * config["batch"] * shape["d"] * 4
        h2d += config["layers"] * boundary
        d2h += config["layers"] * boundary
    return {"compute_ms": flops / PEAK_FLOPS * 1e3,
            "h2d_ms": h2d / COPY_BYTES_PER_S * 1e3,
            "d2h_ms": d2h / COPY_BYTES_PER_S * 1e3}


def peak_bytes(result):
    """Peak device memory of a case: on a GPU the runtime pool's peak (every
    allocation the runtime makes, cuBLAS's workspace included), else the
    session's peak of its one device."""
    pool = result.get("gpu_pool_bytes")
    return pool[0]["peak"] if pool else result["peak_device_bytes"][0]


def report(results, eager, out):
    """Markdown tables of the results (per step, milliseconds)."""
    mib = 1 << 20
    lines = ["| case | step ms | tokens/s | eager / this | peak MiB (runtime)"
             " | device MiB (driver) | copy exposed | host optimizer ms |"
             " forward / recompute / backward ms | h2d / d2h ms |"
             " roofline compute / h2d / d2h ms | step-1 loss |",
             "|" + " --- |" * 12]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | {r['error']} |" + " |" * 10)
            continue
        c, rt = r["config"], r["runtime"]
        dev, steps = rt["devices"][0], r["steps"]
        seq = PRESETS[c["preset"]]["seq"]
        tokens = r.get("tokens_per_s", r.get("samples_per_s", 0) * seq)
        ref = eager.get(f"L{c['layers']}-b{c['batch']}")
        ratio = (f"{ref['step_ms'] / r['step_ms']:.2f}"
                 if ref and ref["step_ms"] == ref["step_ms"] else "-")
        driver = r.get("gpu_driver_bytes")
        driver = f"{driver[0]['used'] / mib:.0f}" if driver else "-"
        peak = peak_bytes(r)
        exposed = dev["copy_exposed_fraction"]
        exposed = f"{exposed:.3f}" if exposed is not None else "-"
        roof = roofline(c)
        lines.append(
            f"| {name} | {r['step_ms']:.1f} | {tokens:.0f} | {ratio} | "
            f"{peak / mib:.0f} | {driver} | {exposed} | "
            f"{rt['optimizer_ms'] / steps:.1f} | "
            f"{dev['forward_ms'] / steps:.1f} / "
            f"{dev['recompute_ms'] / steps:.1f} / "
            f"{dev['backward_ms'] / steps:.1f} | "
            f"{dev['h2d_ms'] / steps:.1f} / {dev['d2h_ms'] / steps:.1f} | "
            f"{roof['compute_ms']:.1f} / {roof['h2d_ms']:.1f} / "
            f"{roof['d2h_ms']:.1f} | {r['first_loss']:.6g} |")
    # The constant-memory variant's peak from the shallowest to the deepest
    # model measured, per batch (acceptance: flat within 5 %).
    for batch in sorted({r["config"]["batch"] for r in results.values()
                         if "config" in r}):
        peaks = sorted((r["config"]["layers"], peak_bytes(r))
                       for r in results.values()
                       if "config" in r and r["config"]["batch"] == batch
                       and r["config"]["variant"] != "plain")
        if len(peaks) > 1:
            (l0, p0), (l1, p1) = peaks[0], peaks[-1]
            lines += ["", f"constant-memory peak at batch {batch}: "
                      f"{p0 / mib:.1f} MiB at {l0} layers, {p1 / mib:.1f} MiB "
                      f"at {l1} layers ({(p1 - p0) / p0 * 100:+.1f} %)"]
    lines += ["", "| PyTorch eager | step ms | peak MiB | fp32 loss of the"
              " initial weights |", "| --- | --- | --- | --- |"]
    for name, e in eager.items():
        peak = f"{e['peak_bytes'] / mib:.0f}" if e["peak_bytes"] else "-"
        loss = e.get("first_loss")
        loss = f"{loss:.6g}" if loss is not None else e.get("error", "-")
        lines.append(f"| {name} | {e['step_ms']:.1f} | {peak} | {loss} |")
    text = "\n".join(lines) + "\n"
    with open(out, "w") as f:
        f.write(text)
    return text


def measure(args):
    os.makedirs(args.out, exist_ok=True)
    work = args.work or os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    deadline = time.monotonic() + args.budget
    cases = []
    for name in sorted(os.listdir(args.artifacts)):
        path = os.path.join(args.artifacts, name, "case.json")
        if os.path.exists(path):
            with open(path) as f:
                cases.append((os.path.join(args.artifacts, name),
                              json.load(f)))
    # What the acceptance needs first (a run cut short by the budget still
    # has it): 24 layers at batch 128, then the constant-memory variant at
    # batch 128 deeper (96 before 48: flat memory from 24 to 96), then
    # batch 32, then everything else by depth.
    def priority(case):
        c = case[1]
        cm = c["variant"] != "plain"
        if c["batch"] == 128 and (c["layers"] == 24 or cm):
            return (0, c["layers"] != 24, -c["layers"], cm)
        return (1, c["layers"], -c["batch"], cm)
    cases.sort(key=priority)
    results, eager = {}, {}
    transfer = "f32"
    if "--ps-transfer" in args.runner_args:
        transfer = args.runner_args[args.runner_args.index("--ps-transfer") + 1]
    for case, config in cases:
        name = os.path.basename(case)
        if time.monotonic() > deadline:
            results[name] = {"error": "skipped (budget)"}
            continue
        config["ps_transfer"] = transfer
        try:
            r = run_case(args, case, config, work)
            r["config"] = config
            results[name] = r
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            results[name] = {"error": str(e).splitlines()[0][:200]}
        key = f"L{config['layers']}-b{config['batch']}"
        if args.torch and key not in eager and config["layers"] in \
                csv_ints(args.torch_layers) and time.monotonic() < deadline:
            try:
                eager[key] = torch_eager(config, args.device, args.torch_steps)
            except Exception as e:  # out of memory, no CUDA, ...
                eager[key] = {"step_ms": float("nan"), "peak_bytes": None,
                              "error": str(e)[:200]}
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"cases": results, "torch_eager": eager}, f, indent=1)
    print(report(results, eager, os.path.join(args.out, "report.md")))
    failed = [n for n, r in results.items()
              if "error" in r and r["error"] != "skipped (budget)"]
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--preset", choices=sorted(PRESETS), default="bert-large")
    p.add_argument("--layers", default="24,48,96")
    p.add_argument("--batches", default="32,128")
    p.add_argument("--microbatch", type=int, default=32)
    p.add_argument("--variants", default="plain,constant-memory")
    p.add_argument("--target", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--gemm-precision", default="bf16")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--llvm-bin", default="/usr/lib/llvm-22/bin")
    p.add_argument("--opt-level", type=int, default=3,
                   help="LLVM optimisation level of the host code")
    m = sub.add_parser("measure")
    m.add_argument("--artifacts", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--work", help="weights, data, logs (default OUT/work; "
                   "the weights of 96 layers are 4.8 GB)")
    m.add_argument("--runner", required=True,
                   help="pipe-runner-cuda (or pipe-runner for cpu cases)")
    m.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="where PyTorch eager runs")
    m.add_argument("--steps", type=int, default=4)
    m.add_argument("--threads", type=int, default=0)
    m.add_argument("--budget", type=float, default=420,
                   help="seconds; cases that would start later are skipped")
    m.add_argument("--case-timeout", type=float, default=180)
    m.add_argument("--no-torch", dest="torch", action="store_false")
    m.add_argument("--torch-layers", default="24")
    m.add_argument("--torch-steps", type=int, default=10)
    m.add_argument("runner_args", nargs="*",
                   help="more pipe-runner arguments (after --)")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args)
        return 0
    args.runner = shutil.which(args.runner) or os.path.abspath(args.runner)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
