#!/usr/bin/env python3
"""check.py - the checks of a sharded corpus run (tests/corpus/parallel.sh, slurm.sh).

  check.py run CORPUS OUT REF TASKS first|again [PREV]
      OUT holds a finished run over CORPUS/list.txt (tests/corpus/make-corpus.sh)
      in TASKS shards, with --root CORPUS/audio, merged by slurm-array.sh --merge.
      PREV: a copy of the task manifests before this run (the run appends to
      them: each must still begin with its copy; only the lines after it are
      this run's). Checks, each printed as one line:
        - the shards covered the list exactly once: every input of the list is in
          exactly one task manifest's lines of this run, once, that of task
          p % TASKS for its list position p, and they name nothing else;
        - OUT/manifest.jsonl holds exactly this run's lines of the task
          manifests (each input's newest line);
        - every good input is "ok" (first) or "skipped" (again), and its output
          OUT/<path under audio/ without extension>.npy equals, byte for byte,
          REF/<same>.npy, written by a single-file run `whisper-stem -m M in -o x.npy`;
        - every bad input is "failed" with a non-empty error, and has no output;
        - OUT/failed.txt is the bad inputs, in list order; OUT/summary.txt counts
          them; the only .npy files under OUT are the good inputs' outputs.
  check.py snapshot OUT
      prints (path, size, mtime, inode) of every file under OUT except the
      manifests, failed.txt, summary.txt and the Slurm logs: two snapshots are
      equal when a run wrote nothing new.
  check.py union CORPUS OUT LISTED
      OUT was run again (through a recipe) over LISTED, a copy of its failed.txt:
      manifest.jsonl still names every input of the corpus list once (good ones
      ok or skipped, bad ones failed), while summary.txt and failed.txt describe
      LISTED only.
  check.py partial CORPUS DIR MERGE TASKS
      DIR holds the task manifests of one run: the last line of manifest-0.jsonl
      is cut in two (a full disk) and MERGE --merge run: that line is warned
      about and counted as unreadable, its input is not reached, and
      manifest-1.jsonl's first line is read as it is (not glued to the cut one).
  check.py cutline M0 N0 OUT
      M0 (a task manifest) was cut inside its last line, N0 whole lines before
      it, then a run appended to it and merged into OUT: the cut line is alone
      on line N0 + 1, every other line is JSON, summary.txt counts 1 unreadable.
  check.py wfprep DIR WS MODEL
      the workflow's corpus in DIR (see wf_prep), references by WS -m MODEL
  check.py wf interrupted|retried|rerun DIR OUT file|tar [LISTED]
      the workflow's steps (tests/corpus/workflow.sh): after a run interrupted
      once it had written something, after a retry of LISTED (a copy of
      failed.txt), after a rerun of the whole list
  check.py retried MANIFEST CORPUS
      MANIFEST is a run with --list OUT/failed.txt: it names exactly the bad
      inputs, each failed (failed.txt works as a list).
  check.py escapes MERGE DIR
      writes DIR/manifest-0.jsonl with inputs that JSON must escape (\u00e9,
      a surrogate pair, \\, \", a tab, a control byte, a byte that is not
      UTF-8 as \\udcXX) as json.dumps writes them (ASCII only), and
      DIR/list.txt; runs MERGE --merge DIR DIR/list.txt 1 and checks that
      failed.txt gives back the paths byte for byte.
  check.py lost CORPUS OUT TASKS LOST[,LOST...]
      OUT was merged with the manifests of tasks LOST missing or empty (tasks
      killed before they wrote a line): failed.txt holds those shards' inputs
      and the bad ones, in list order, and summary.txt counts the shards'
      inputs as not reached.

This reads the manifests with Python's json module, not with the awk merge of
scripts/slurm-array.sh, so the two do not share a misreading.
Exit status: 0 all checks passed, 1 some failed (each printed with what differed).
"""
import json
import os
import sys

failures = 0


def ok(cond, what, detail=""):
    global failures
    if cond:
        print("  \u2713 " + what)
    else:
        failures += 1
        print("  \u2717 " + what + (": " + detail if detail else ""))
    return cond


def read_list(path):
    """whisper-stem --list's rules: LF then CR dropped, empty and '#' lines skipped."""
    out = []
    with open(path, "rb") as f:
        for raw in f:
            line = raw[:-1] if raw.endswith(b"\n") else raw
            line = line[:-1] if line.endswith(b"\r") else line
            if line and not line.startswith(b"#"):
                out.append(line.decode())
    return out


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [l.rstrip("\n") for l in f]


def read_jsonl(path):
    recs = []
    for n, line in enumerate(read_lines(path), 1):
        if line.strip():
            try:
                recs.append(json.loads(line))
            except ValueError as e:
                recs.append({"_bad": "%s line %d: %s" % (path, n, e)})
    return recs


def first_few(items, n=5):
    items = list(items)
    return ", ".join(repr(x) for x in items[:n]) + (" ... (%d in all)" % len(items) if len(items) > n else "")


def out_path(out, corpus, inp):
    rel = os.path.relpath(inp, os.path.join(corpus, "audio"))
    return os.path.join(out, os.path.splitext(rel)[0] + ".npy")


def same_file(a, b):
    if not os.path.isfile(a) or not os.path.isfile(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def check_run(corpus, out, ref, tasks, phase, prev=None):
    tasks = int(tasks)
    listed = read_list(os.path.join(corpus, "list.txt"))
    good = read_lines(os.path.join(corpus, "good.txt"))
    bad = read_lines(os.path.join(corpus, "bad.txt"))
    ok(sorted(listed) == sorted(good + bad) and len(set(listed)) == len(listed),
       "the list holds the %d good and %d bad inputs once each" % (len(good), len(bad)))

    # each input in exactly one task manifest, that of its shard
    seen = {}
    lines_task = []
    malformed = []
    for t in range(tasks):
        path = os.path.join(out, "manifest-%d.jsonl" % t)
        if not ok(os.path.isfile(path), "task %d wrote %s" % (t, os.path.basename(path))):
            continue
        lines = read_lines(path)
        if prev is not None:
            pp = os.path.join(prev, "manifest-%d.jsonl" % t)
            old = read_lines(pp) if os.path.isfile(pp) else []
            ok(lines[:len(old)] == old,
               "task %d appended to %s (its %d earlier lines kept)" % (t, os.path.basename(path), len(old)))
            lines = lines[len(old):]
        lines = [l for l in lines if l.strip()]
        lines_task += lines
        for n, l in enumerate(lines, 1):
            try:
                r = json.loads(l)
            except ValueError as e:
                r = {"_bad": "%s line %d of this run: %s" % (path, n, e)}
            if "_bad" in r:
                malformed.append(r["_bad"])
                continue
            seen.setdefault(r.get("input"), []).append(t)
    ok(not malformed, "every manifest line is JSON", first_few(malformed))
    pos = {inp: p for p, inp in enumerate(listed)}
    wrong = [(i, ts, pos[i] % tasks) for i, ts in seen.items() if i in pos and ts != [pos[i] % tasks]]
    unlisted = [i for i in seen if i not in pos]
    unseen = [i for i in listed if i not in seen]
    ok(not wrong and not unlisted and not unseen,
       "the %d shards covered the list exactly once (input at position p in task p %% %d only)"
       % (tasks, tasks),
       "in the wrong task or more than one (input, tasks, expected): %s; not in the list: %s; "
       "in no manifest: %s" % (first_few(wrong), first_few(unlisted), first_few(unseen)))

    merged_path = os.path.join(out, "manifest.jsonl")
    merged_lines = [l for l in read_lines(merged_path) if l.strip()] if os.path.isfile(merged_path) else None
    ok(merged_lines is not None and sorted(merged_lines) == sorted(lines_task),
       "manifest.jsonl holds exactly the %d lines this run appended to the task manifests" % len(lines_task),
       "missing" if merged_lines is None else "%d lines there" % len(merged_lines))

    recs = {}
    for r in read_jsonl(merged_path) if merged_lines is not None else []:
        if "_bad" not in r:
            recs[r.get("input")] = r

    want = "ok" if phase == "first" else "skipped"
    not_want, wrong_out, differ = [], [], []
    for inp in good:
        r = recs.get(inp, {})
        if r.get("status") != want:
            not_want.append((inp, r.get("status"), r.get("error")))
        expect = out_path(out, corpus, inp)
        if phase == "first" and os.path.normpath(os.path.abspath(r.get("output") or "")) != os.path.abspath(expect):
            wrong_out.append((inp, r.get("output"), expect))
        if not same_file(expect, out_path(ref, corpus, inp)):
            differ.append(expect)
    ok(not not_want, "all %d good inputs are \"%s\"" % (len(good), want), first_few(not_want))
    if phase == "first":
        ok(not wrong_out, "each good input's manifest output is OUT/<path under the root>.npy",
           first_few(wrong_out))
    ok(not differ, "each of the %d outputs equals (byte for byte) a single-file run of its input"
       % len(good), "differ or missing: " + first_few(differ))

    bad_wrong = []
    for inp in bad:
        r = recs.get(inp, {})
        err = r.get("error")
        if r.get("status") != "failed" or not isinstance(err, str) or not err.strip():
            bad_wrong.append((inp, r.get("status"), err))
        elif os.path.exists(out_path(out, corpus, inp)):
            bad_wrong.append((inp, "has an output", out_path(out, corpus, inp)))
    ok(not bad_wrong, "all %d bad inputs are \"failed\" with an error and no output" % len(bad),
       first_few(bad_wrong))

    failed_txt = os.path.join(out, "failed.txt")
    want_failed = [i for i in listed if i in set(bad)]
    got_failed = read_lines(failed_txt) if os.path.isfile(failed_txt) else None
    ok(got_failed == want_failed, "failed.txt lists the %d bad inputs in list order" % len(bad),
       "got %s" % first_few(got_failed or []))

    summary_path = os.path.join(out, "summary.txt")
    summary = open(summary_path, encoding="utf-8").read() if os.path.isfile(summary_path) else ""
    counts = {"ok": len(good) if phase == "first" else 0,
              "skipped": 0 if phase == "first" else len(good),
              "failed": len(bad), "not reached": 0}
    wrong_counts = [k for k, v in counts.items()
                    if not any(l.split(":")[0].strip() == k and l.split(":")[1].split()[0] == str(v)
                               for l in summary.splitlines() if ":" in l and l.split(":")[1].split())]
    ok(not wrong_counts, "summary.txt counts %s" % ", ".join("%s %d" % kv for kv in counts.items()),
       "wrong: %s in\n%s" % (", ".join(wrong_counts), summary))

    npys = set()
    for d, _, files in os.walk(out):
        npys |= {os.path.abspath(os.path.join(d, f)) for f in files if f.endswith(".npy")}
    expected = {os.path.abspath(out_path(out, corpus, i)) for i in good}
    ok(npys == expected, "the .npy files under OUT are exactly the %d good inputs' outputs" % len(good),
       "extra: %s; missing: %s" % (first_few(sorted(npys - expected)), first_few(sorted(expected - npys))))


def snapshot(out):
    skip_top = {"manifest.jsonl", "failed.txt", "summary.txt", "slurm-logs"}
    rows = []
    for d, dirs, files in os.walk(out):
        if d == out:
            dirs[:] = [x for x in dirs if x not in skip_top]
        for f in files:
            if d == out and (f in skip_top or (f.startswith("manifest-") and f.endswith(".jsonl"))):
                continue
            p = os.path.join(d, f)
            st = os.lstat(p)
            rows.append("%s %d %d %d" % (os.path.relpath(p, out), st.st_size, st.st_mtime_ns, st.st_ino))
    for r in sorted(rows):
        print(r)


def check_retried(manifest, corpus):
    bad = read_lines(os.path.join(corpus, "bad.txt"))
    recs = read_jsonl(manifest)
    got = sorted((r.get("input"), r.get("status")) for r in recs)
    ok(got == sorted((b, "failed") for b in bad),
       "whisper-stem --list OUT/failed.txt reads back the %d bad inputs, each failed again" % len(bad),
       "got %r" % (got,))


def summary_count(out, key):
    path = os.path.join(out, "summary.txt")
    for l in open(path, encoding="utf-8").read().splitlines() if os.path.isfile(path) else []:
        k, _, v = l.partition(":")
        if k.strip() == key and v.split():
            return v.split()[0]
    return None


def check_lost(corpus, out, tasks, lost):
    tasks, lost = int(tasks), {int(x) for x in lost.split(",")}
    listed = read_list(os.path.join(corpus, "list.txt"))
    bad = set(read_lines(os.path.join(corpus, "bad.txt")))
    shard = [i for p, i in enumerate(listed) if p % tasks in lost]
    want = [i for p, i in enumerate(listed) if p % tasks in lost or i in bad]
    path = os.path.join(out, "failed.txt")
    got = read_lines(path) if os.path.isfile(path) else None
    ok(got == want, "without tasks %s's lines, failed.txt holds their %d inputs and the bad ones"
       % (sorted(lost), len(shard)), "got %s" % (first_few(got or []),))
    n = summary_count(out, "not reached")
    ok(n == str(len(shard)), "summary.txt counts them as not reached (%d)" % len(shard),
       "it says %r" % (n,))


def check_escapes(merge, d):
    import subprocess
    paths = ["/d/caf\u00e9 x.wav", "/d/back\\slash.wav", '/d/q"uote.wav', "/d/tab\there.wav",
             "/d/face\U0001F600.wav", "/d/ctl\x01.wav", "/d/slash/.wav", "/d/latin1-\udce9.wav",
             "/d/ok.wav"]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "manifest-0.jsonl"), "w", encoding="ascii") as f:
        for p in paths:
            st = "ok" if p.endswith("/ok.wav") else "failed"
            f.write(json.dumps({"input": p, "output": None, "status": st,
                                "error": None if st == "ok" else p + ': "bad"'},
                               separators=(",", ":")) + "\n")
    with open(os.path.join(d, "list.txt"), "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("".join(p + "\n" for p in paths + ["/d/never.wav"]))
    r = subprocess.run([merge, "--merge", d, os.path.join(d, "list.txt"), "1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    want = [p for p in paths + ["/d/never.wav"] if not p.endswith("/ok.wav")]
    path = os.path.join(d, "failed.txt")
    got = open(path, encoding="utf-8", errors="surrogateescape").read().split("\n")[:-1] \
        if os.path.isfile(path) else None
    ok(r.returncode == 1 and got == want,
       "the merge unescapes JSON strings (\\uXXXX, surrogate pairs, \\\\, \\\", \\t, \\udcXX for a byte that "
       "is not UTF-8) back to the list's bytes",
       "status %d, failed.txt %r" % (r.returncode, got))


def check_union(corpus, out, listed_path):
    """OUT/manifest.jsonl after a retry of LISTED (a part of the corpus list)."""
    listed = read_list(os.path.join(corpus, "list.txt"))
    good = set(read_lines(os.path.join(corpus, "good.txt")))
    bad = set(read_lines(os.path.join(corpus, "bad.txt")))
    recs = read_jsonl(os.path.join(out, "manifest.jsonl"))
    inputs = [r.get("input") for r in recs]
    ok(sorted(inputs) == sorted(listed),
       "manifest.jsonl still holds one line per input of the whole list (%d), not only the retried ones"
       % len(listed), "%d lines, %d distinct" % (len(inputs), len(set(inputs))))
    wrong = [(r.get("input"), r.get("status")) for r in recs
             if r.get("status") != "failed" and r.get("input") in bad
             or r.get("status") not in ("ok", "skipped") and r.get("input") in good]
    ok(not wrong, "in it the good inputs are ok or skipped, the bad ones failed", first_few(wrong))
    retried = read_list(listed_path)
    n = summary_count(out, "failed")
    ok(summary_count(out, "ok") == "0" and summary_count(out, "skipped") == "0" and
       n == str(len(retried)) and summary_count(out, "not reached") == "0",
       "summary.txt counts the %d retried inputs only, each failed" % len(retried),
       open(os.path.join(out, "summary.txt")).read())
    got = read_lines(os.path.join(out, "failed.txt"))
    ok(got == retried, "failed.txt lists the same %d inputs" % len(retried), first_few(got))


def check_partial(corpus, d, merge, tasks):
    """D holds task manifests of one run over the corpus list, each input once. The last line of
    manifest-0.jsonl is cut in two (no newline: a full disk); the merge must count it as
    unreadable, report its input not reached, and read manifest-1.jsonl's first line as it is."""
    import subprocess
    p0 = os.path.join(d, "manifest-0.jsonl")
    lines0 = read_lines(p0)
    cut = json.loads(lines0[-1])
    with open(p0, "w", encoding="utf-8") as f:
        f.write("".join(l + "\n" for l in lines0[:-1]) + lines0[-1][:len(lines0[-1]) // 2])
    first1 = json.loads(read_lines(os.path.join(d, "manifest-1.jsonl"))[0])
    r = subprocess.run([merge, "--merge", d, os.path.join(corpus, "list.txt"), tasks],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = r.stderr.decode(errors="replace")
    ok(r.returncode == 1 and "manifest-0.jsonl line %d" % len(lines0) in err,
       "the merge warns about the partial line (manifest-0.jsonl line %d)" % len(lines0),
       "status %d, stderr %r" % (r.returncode, err))
    ok(summary_count(d, "unreadable") == "1", "summary.txt counts 1 unreadable line",
       "it says %r" % summary_count(d, "unreadable"))
    failed = read_lines(os.path.join(d, "failed.txt"))
    ok(cut["input"] in failed, "the cut line's input is in failed.txt (not reached)", cut["input"])
    merged = {r.get("input"): r for r in read_jsonl(os.path.join(d, "manifest.jsonl"))}
    got = merged.get(first1["input"], {})
    ok(got == first1, "manifest-1.jsonl's first input keeps its own line (status %s)" % first1["status"],
       "got %r" % (got,))
    listed = read_list(os.path.join(corpus, "list.txt"))
    ok(len(merged) == len(listed) - 1 and cut["input"] not in merged,
       "manifest.jsonl holds every other input once (%d)" % (len(listed) - 1), "%d" % len(merged))


def check_cut_line(m0, n0, out):
    """M0 was cut inside its last line (N0 whole lines before it), then a run appended to it."""
    n0 = int(n0)
    lines = open(m0, encoding="utf-8").read().split("\n")
    bad = []
    for i, l in enumerate(lines[:-1]):
        try:
            json.loads(l)
        except ValueError:
            bad.append(i + 1)
    ok(bad == [n0 + 1] and lines[-1] == "",
       "the cut line stays alone (line %d of %s), the next run's lines whole after it"
       % (n0 + 1, os.path.basename(m0)), "lines that are not JSON: %r" % (bad,))
    ok(summary_count(out, "unreadable") == "1", "summary.txt counts 1 unreadable line",
       "it says %r" % (summary_count(out, "unreadable"),))


# --- the workflow of tests/corpus/workflow.sh and slurm.sh --------------------

def wf_prep(d, ws, model):
    """A small corpus for the workflow: 11 good WAV files (the last, z/late.wav, listed
    last; the test swaps a FIFO in for it while a run must not end), 3 broken ones,
    single-file references and each broken file's error from a single-file run."""
    import subprocess
    import wave
    import numpy as np
    rng = np.random.default_rng(7)
    audio = os.path.join(d, "audio")
    good, bad = [], []

    def wav(path, seconds, rate, ch):
        n = int(seconds * rate)
        t = np.arange(n) / rate
        x = np.stack([0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * t) for _ in range(ch)], 1)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with wave.open(path, "wb") as w:
            w.setnchannels(ch)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes((x * 32767).astype("<i2").tobytes())

    for i, sub in enumerate(["a"] * 5 + ["b"] * 5):
        p = os.path.join(audio, sub, "%02d.wav" % (i % 5 + 1))
        wav(p, rng.uniform(0.3, 0.8), (16000, 44100)[i % 2], 1 + i // 5)
        good.append(p)
    os.makedirs(os.path.join(audio, "bad"))
    open(os.path.join(audio, "bad", "empty.wav"), "wb").close()
    with open(os.path.join(audio, "bad", "text.wav"), "w") as f:
        f.write("not audio\n")
    wav(os.path.join(audio, "bad", "whole.wav"), 0.5, 16000, 1)
    data = open(os.path.join(audio, "bad", "whole.wav"), "rb").read()
    os.remove(os.path.join(audio, "bad", "whole.wav"))
    with open(os.path.join(audio, "bad", "cut.wav"), "wb") as f:
        f.write(data[:30])
    bad = [os.path.join(audio, "bad", n) for n in ("empty.wav", "text.wav", "cut.wav")]
    late = os.path.join(audio, "z", "late.wav")
    wav(late, 0.5, 16000, 1)
    inputs = good + bad
    order = rng.permutation(len(inputs))
    with open(os.path.join(d, "list.txt"), "w") as f:
        f.write("".join(inputs[i] + "\n" for i in order) + late + "\n")
    for name, items in (("good.txt", good + [late]), ("bad.txt", bad)):
        with open(os.path.join(d, name), "w") as f:
            f.write("".join(p + "\n" for p in items))
    errors = {}
    for p in good + [late] + bad:
        ref = os.path.join(d, "ref", os.path.splitext(os.path.relpath(p, audio))[0] + ".npy")
        os.makedirs(os.path.dirname(ref), exist_ok=True)
        r = subprocess.run([ws, "-m", model, "--device", "cpu", "-q", p, "-o", ref],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p in bad:
            line = r.stderr.decode().splitlines()[0] if r.stderr else ""
            errors[p] = line[len("whisper-stem: "):] if line.startswith("whisper-stem: ") else line
            if r.returncode != 1 or not errors[p]:
                ok(False, "a single-file run of %s fails with a message" % p)
                return
        elif r.returncode != 0:
            ok(False, "a single-file run of %s" % p, r.stderr.decode())
            return
    with open(os.path.join(d, "errors.json"), "w") as f:
        json.dump(errors, f)
    os.rename(late, late + ".real")
    print("  workflow corpus: %d good and %d broken inputs, references made" % (len(good) + 1, len(bad)))


def wf_lines(path):
    """(records, bad line numbers) of a JSON Lines file; a missing file has none."""
    recs, bad = [], []
    if not os.path.isfile(path):
        return recs, bad
    for n, l in enumerate(open(path, encoding="utf-8").read().split("\n")[:-1], 1):
        try:
            r = json.loads(l)
            recs.append(r) if isinstance(r, dict) else bad.append(n)
        except ValueError:
            bad.append(n)
    return recs, bad


def wf_own_error(rec, inp, errors):
    err = rec.get("error")
    want = errors[inp]
    msg = want[len(inp) + 2:] if want.startswith(inp + ": ") else want
    return rec.get("status") == "failed" and isinstance(err, str) and err.startswith(inp + ": ") \
        and msg in err


def wf_check(phase, d, out, mode, listed_path=None):
    listed = read_list(os.path.join(d, "list.txt"))
    good = read_lines(os.path.join(d, "good.txt"))
    bad = read_lines(os.path.join(d, "bad.txt"))
    errors = json.load(open(os.path.join(d, "errors.json")))
    tag = "%s, %s:" % (mode, phase)
    task_bad = []
    for f in sorted(os.listdir(out)) if os.path.isdir(out) else []:
        if f.startswith("manifest") and f.endswith(".jsonl"):
            task_bad += ["%s line %d" % (f, n) for n in wf_lines(os.path.join(out, f))[1]]
    ok(not task_bad, tag + " every line of the manifests is one whole JSON object", first_few(task_bad))
    recs, _ = wf_lines(os.path.join(out, "manifest.jsonl"))
    by = {}
    for r in recs:
        by.setdefault(r.get("input"), []).append(r)
    failed_txt = read_lines(os.path.join(out, "failed.txt")) if os.path.isfile(os.path.join(out, "failed.txt")) else None
    summary_path = os.path.join(out, "summary.txt")
    summary = open(summary_path, encoding="utf-8").read() if os.path.isfile(summary_path) else ""

    if phase == "interrupted":
        done = [i for i in listed if i in by]
        late = listed[-1]
        ok(any(r[0].get("status") == "ok" for r in by.values()) and late not in by,
           tag + " the merge after the interruption holds outputs written, not the input held back",
           "%d inputs merged" % len(by))
        ok(failed_txt is not None and late in failed_txt and
           failed_txt == [i for i in listed if i in set(failed_txt)] and
           all(i in by or i in failed_txt for i in listed),
           tag + " failed.txt lists, in list order, what was not done (the held-back input among them)",
           "failed.txt %s" % first_few(failed_txt or []))
        n = summary_count(out, "not reached")
        ok(n is not None and int(n) >= 1, tag + " summary.txt counts inputs not reached", "it says %r" % n)
        return

    if phase == "retried":
        retried = read_list(listed_path)
        ok(sorted(by) == sorted(listed) and all(len(v) == 1 for v in by.values()),
           tag + " manifest.jsonl holds each of the %d inputs of the whole list once, not only the %d retried"
           % (len(listed), len(retried)), "%d lines, %d inputs" % (len(recs), len(by)))
        wrong = [(i, by.get(i, [{}])[-1].get("error")) for i in bad if not wf_own_error(by.get(i, [{}])[-1], i, errors)]
        ok(not wrong, tag + " each broken input failed with its own decode error (as a single-file run says)",
           first_few(wrong))
        shown = [i for i in bad if errors[i] not in summary and errors[i][len(i) + 2:] not in summary]
        ok(not shown, tag + " summary.txt shows each broken input's error", first_few(shown))
        ok(failed_txt == [i for i in retried if i in set(bad)],
           tag + " failed.txt is the %d broken inputs, in the retried list's order" % len(bad),
           "got %s" % first_few(failed_txt or []))
        counts = {k: summary_count(out, k) for k in ("ok", "skipped", "failed", "not reached")}
        ok(counts["failed"] == str(len(bad)) and counts["not reached"] == "0" and
           int(counts["ok"] or 0) + int(counts["skipped"] or 0) == len(retried) - len(bad),
           tag + " summary.txt counts the %d retried inputs: %d failed, the rest ok or skipped"
           % (len(retried), len(bad)), "%r" % counts)
        return

    # the rerun of the whole list
    ok(sorted(by) == sorted(listed) and all(len(v) == 1 for v in by.values()),
       tag + " manifest.jsonl holds one line per input of the list (%d)" % len(listed),
       "%d lines, %d inputs" % (len(recs), len(by)))
    no_time = [r.get("input") for r in recs if not isinstance(r.get("time"), (int, float))]
    ok(not no_time, tag + " every line has a numeric \"time\" (the merge keeps the newest)", first_few(no_time))
    meta, differ = [], []
    for i in good:
        r = by.get(i, [{}])[-1]
        if r.get("status") not in ("ok", "skipped") or not isinstance(r.get("shape"), list) or \
                not all(isinstance(r.get(k), (int, float)) for k in ("duration_s", "windows", "valid_ctx")):
            meta.append((i, r.get("status"), sorted(k for k in ("shape", "duration_s", "windows", "valid_ctx")
                                                     if k not in r)))
            continue
        ref = os.path.join(d, "ref", os.path.splitext(os.path.relpath(i, os.path.join(d, "audio")))[0] + ".npy")
        want = open(ref, "rb").read()
        if mode == "tar":
            import tarfile
            shard, member = r.get("shard") or r.get("output"), r.get("member")
            try:
                with tarfile.open(shard) as t:
                    got = t.extractfile(member).read()
            except Exception as e:  # noqa: BLE001 - any failure is a difference
                got = repr(e)
        else:
            got = open(r.get("output"), "rb").read() if os.path.isfile(r.get("output") or "") else None
        if got != want:
            differ.append(i)
    ok(not meta, tag + " every good input is ok or skipped with its metadata (shape, duration_s, windows, "
       "valid_ctx)", "(input, status, missing): " + first_few(meta))
    ok(not differ, tag + " each good input's output (%s) equals a single-file run" %
       ("its tar member" if mode == "tar" else "OUT/<path>.npy"), first_few(differ))
    wrong = [(i, by.get(i, [{}])[-1].get("error")) for i in bad if not wf_own_error(by.get(i, [{}])[-1], i, errors)]
    ok(not wrong, tag + " each broken input failed with its own decode error", first_few(wrong))
    ok(failed_txt == [i for i in listed if i in set(bad)], tag + " failed.txt is the broken inputs",
       "got %s" % first_few(failed_txt or []))
    counts = {k: summary_count(out, k) for k in ("ok", "skipped", "failed", "not reached")}
    ok(counts["failed"] == str(len(bad)) and counts["not reached"] == "0" and
       int(counts["ok"] or 0) + int(counts["skipped"] or 0) == len(good),
       tag + " summary.txt: %d ok or skipped, %d failed, none not reached" % (len(good), len(bad)), "%r" % counts)


def main(argv):
    if len(argv) in (7, 8) and argv[1] == "run" and argv[6] in ("first", "again"):
        check_run(*argv[2:])
    elif len(argv) == 3 and argv[1] == "snapshot":
        snapshot(argv[2])
    elif len(argv) == 4 and argv[1] == "escapes":
        check_escapes(argv[2], argv[3])
    elif len(argv) == 6 and argv[1] == "lost":
        check_lost(*argv[2:])
    elif len(argv) == 5 and argv[1] == "union":
        check_union(*argv[2:])
    elif len(argv) == 6 and argv[1] == "partial":
        check_partial(*argv[2:])
    elif len(argv) == 5 and argv[1] == "cutline":
        check_cut_line(*argv[2:])
    elif len(argv) == 5 and argv[1] == "wfprep":
        wf_prep(*argv[2:])
    elif len(argv) in (6, 7) and argv[1] == "wf" and argv[2] in ("interrupted", "retried", "rerun"):
        wf_check(*argv[2:])
    elif len(argv) == 4 and argv[1] == "retried":
        check_retried(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
