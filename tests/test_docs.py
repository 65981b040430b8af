"""The docs cannot drift from what they describe: the README's reading order gives each file's line count; every
internal link and anchor, and every docs/NAME.md#anchor and `python -m` command in the code, points to a file, heading
or module that exists; the scores and steps the docs quote are those of the shipped model's metrics.json and training
histories; the benchmark numbers the README and the design notes quote are those of the runs saved in bench/results/
(`python -m bench.NAME --save NAME`), each read from its entry; and the shipped model card is what `modeldir.card` makes
of its directory.

After files change length, `python tests/test_docs.py` prints the README's reading-order table with today's line
counts, and `python tests/test_docs.py --write` puts it into README.md, and docs/app.md's table of the page's clicks
made from bench/results/app_latency.json.
"""

import ast
import json
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from test_layering import BELOW

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # run as a script (--write): the project's packages importable, as under pytest
    sys.path.insert(0, str(ROOT))
README = ROOT / "README.md"
MODEL = ROOT / "assets" / "model"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md")), MODEL / "README.md"]
READING_ORDER = "## Read the code in this order"
FILE_LINK = re.compile(r"\[`([^`]+)`\]\(([^)]+)\)")  # [`path`](path), as the reading order names its files


# ---- The README's reading order: line counts ----


def line_count(path):
    return len((ROOT / path).read_text(encoding="utf-8").splitlines())


def reading_order_rows(readme_text):
    """(line, [file paths], [line counts as written]) for each row of the README's reading-order table."""
    section = readme_text.split(READING_ORDER, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            paths = [target for _, target in FILE_LINK.findall(cells[1])]
            rows.append((line, paths, [int(n) for n in re.findall(r"\d+", cells[2])]))
    return rows


def synced_reading_order(readme_text):
    """The README with each reading-order row's line counts made the files' own."""
    for line, paths, _ in reading_order_rows(readme_text):
        cells = line.split("|")
        cells[3] = " " + ", ".join(str(line_count(p)) for p in paths) + " "
        readme_text = readme_text.replace(line, "|".join(cells), 1)
    return readme_text


def test_reading_order_gives_each_files_line_count():
    rows = reading_order_rows(README.read_text(encoding="utf-8"))
    assert len(rows) >= 10 and all(paths for _, paths, _ in rows)
    wrong = [
        f"{path}: {written} written, {line_count(path)} lines"
        for _, paths, counts in rows
        for path, written in zip(paths, counts)
        if written != line_count(path)
    ]
    assert all(len(paths) == len(counts) for _, paths, counts in rows)
    assert not wrong, "; ".join(wrong) + " (python tests/test_docs.py --write re-syncs the table)"


def test_the_table_is_re_synced_from_the_files():
    stale = (
        f"{READING_ORDER}\n\n| | file | lines | what |\n|---|---|---|---|\n"
        "| 1 | [`app.py`](app.py) | 1 | the app |\n"
        "| 2 | [`README.md`](README.md), [`LICENSE`](LICENSE) | 2, 3 | two files |\n"
        "\n## Next\n| 3 | x | 4 | y |\n"
    )  # a table of the next section is not the reading order
    rows = reading_order_rows(synced_reading_order(stale))
    assert [(paths, counts) for _, paths, counts in rows] == [
        (["app.py"], [line_count("app.py")]),
        (["README.md", "LICENSE"], [line_count("README.md"), line_count("LICENSE")]),
    ]
    assert rows[0][0] == f"| 1 | [`app.py`](app.py) | {line_count('app.py')} | the app |"


# ---- Links, anchors and commands ----


def outside_fences(text):
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def outside_code(text):
    """Markdown text without its fenced code blocks and inline code spans (links there are not links)."""
    return re.sub(r"`[^`\n]*`", "", outside_fences(text))


def github_anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors by its text
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    """Every heading anchor of a Markdown file, repeated headings numbered as GitHub numbers them."""
    seen, found = {}, set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", outside_fences(path.read_text(encoding="utf-8")), flags=re.M):
        anchor = github_anchor(heading)
        found.add(anchor if anchor not in seen else f"{anchor}-{seen[anchor]}")
        seen[anchor] = seen.get(anchor, 0) + 1
    return found


def internal_links(path):
    """(target, anchor) of each link and image of a Markdown file that stays in the repository."""
    targets = re.findall(r"\]\(([^)\s]+)(?: \"[^\"]*\")?\)", outside_code(path.read_text(encoding="utf-8")))
    return [tuple(t.partition("#")[::2]) for t in targets if not re.match(r"[a-z]+:", t)]


def test_anchor_slugs_follow_github():
    assert github_anchor("Choosing the `cpu` config") == "choosing-the-cpu-config"
    assert github_anchor("After part 8: a third teacher, checked against the human references") == (
        "after-part-8-a-third-teacher-checked-against-the-human-references"
    )
    assert github_anchor('One register for "you"') == "one-register-for-you"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_internal_link_and_anchor_exists(doc):
    dead = []
    for target, anchor in internal_links(doc):
        path = (doc.parent / target).resolve() if target else doc
        if not path.exists():
            dead.append(target)
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            dead.append(f"{target}#{anchor}")
    assert not dead, f"{doc.relative_to(ROOT)}: dead links {dead}"


SOURCES = [
    p
    for p in sorted(ROOT.rglob("*"))
    if p.suffix in (".py", ".js")
    and p.is_file()
    and not {".git", "runs", "data"} & set(p.relative_to(ROOT).parts)
    and p != Path(__file__).resolve()
]
DOC_POINTER = re.compile(r"\b((?:docs/[\w-]+|README)\.md)(?:#([\w-]+))?")  # docs/design.md#pre-norm in a comment


def test_code_points_to_docs_and_sections_that_exist():
    dead, vague = [], []
    for source in SOURCES:
        text = source.read_text(encoding="utf-8")
        name = source.relative_to(ROOT)
        for target, anchor in DOC_POINTER.findall(text):
            if not (ROOT / target).exists() or (anchor and anchor not in anchors(ROOT / target)):
                dead.append(f"{name}: {target}#{anchor}")
        vague += [f"{name}: {m.group(0)!r}" for m in re.finditer(r"\bREADME\b(?!\.md)[^\n]{0,20}", text)]
    assert SOURCES and not dead, f"code points to docs that are gone: {dead}"
    assert not vague, f"point to a doc and section as docs/NAME.md#anchor, not to the README by name: {vague}"


MEASURED = re.compile(
    r"(?:\babout|~|\broughly|\btakes?|\btook)\s?\d[\d.,]*\s?(?:ms|s|seconds|minutes|min|[kMG]i?B)\b"
)  # "about 15 s a run", "~55 MB": what a bench measures, quoted where no test keeps it true


def measurements_in(text):
    return [m.group(0) for m in MEASURED.finditer(text)]


def test_code_quotes_no_measurements():
    """Timings and sizes live in bench/results/ and the docs that quote them (checked above), not in code's text."""
    found = [f"{s.relative_to(ROOT)}: {m!r}" for s in SOURCES for m in measurements_in(s.read_text(encoding="utf-8"))]
    assert not found, f"measurements in docstrings or comments (move them to a bench result): {found}"


def test_a_measurement_in_code_is_found():
    assert measurements_in("(about 15 s a run) ~55 MB; it took 3 minutes; at most 60 MB; 5 s after it") == [
        "about 15 s",
        "~55 MB",
        "took 3 minutes",
    ]


COMMAND = re.compile(r"python -m ([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)\b(?!\.[A-Z])")  # not bench.NAME


def test_every_command_the_docs_and_code_give_runs_a_module_that_exists():
    """`python -m training.recipes.distill` and the like, in the docs and the code's own usage lines (the shipped
    card's recorded commands are as they were run, and are not checked)."""
    missing = []
    for path in [*(doc for doc in DOCS if doc.parent != MODEL), *SOURCES]:
        for module in COMMAND.findall(path.read_text(encoding="utf-8")):
            file = ROOT / module.replace(".", "/")
            if (ROOT / module.split(".")[0]).is_dir() and not (
                file.with_suffix(".py").is_file() or (file / "__main__.py").is_file()
            ):
                missing.append(f"{path.relative_to(ROOT)}: python -m {module}")
    assert not missing, f"commands of modules that do not exist: {missing}"


def test_a_dead_anchor_is_found(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text(
        "# Top\n\n## The eleven parts compared\n\n[ok](#the-eleven-parts-compared) "
        "[gone](#the-four-parts-compared) `[code](#not-a-link)`\n",
        encoding="utf-8",
    )
    assert internal_links(doc) == [("", "the-eleven-parts-compared"), ("", "the-four-parts-compared")]
    assert anchors(doc) == {"top", "the-eleven-parts-compared"}


# ---- Numbers that come from metrics.json ----


def metrics():
    return json.loads((MODEL / "metrics.json").read_text(encoding="utf-8"))


def bleu(data, decoding="greedy", variant="as given", subset="all", precision="float32"):
    """The BLEU of one score record of the shipped model's metrics.json, to two decimals as the docs' tables write it
    (JSON's 19.3 is the tables' 19.30)."""
    wanted = dict(data=data, decoding=decoding, variant=variant, subset=subset, precision=precision)
    found = [s for s in metrics()["scores"] if all(s.get(k) == v for k, v in wanted.items())]
    assert len(found) == 1, f"metrics.json has {len(found)} records {wanted}"
    return Decimal(str(found[0]["bleu"])).quantize(Decimal("0.01"))


def tenths(score):
    """A score to one decimal, as the docs round it (54.05 is 54.1)."""
    return Decimal(str(score)).quantize(Decimal("0.1"), ROUND_HALF_UP)


def quotes():
    """(doc, text) that each doc must hold, its numbers read from metrics.json; `**` and line breaks don't count."""
    test, test4 = bleu("test-tatoeba"), bleu("test-tatoeba", "beam 4")
    dev, dev4 = bleu("dev"), bleu("dev", "beam 4")
    dev_once, dev4_once = bleu("dev", subset="each sentence once"), bleu("dev", "beam 4", subset="each sentence once")
    news, news4 = bleu("dev-news"), bleu("dev-news", "beam 4")
    first2000 = "test-tatoeba, first 2000"
    capitals, typed = bleu(first2000, variant="capitals"), bleu(first2000, variant="capitals, as typed")
    by_length = {n: bleu("test-tatoeba", subset=f"{n} words") for n in ("1-5", "6-10", "11-20", "21+")}
    n_test = next(s["n"] for s in metrics()["scores"] if s["data"] == "test-tatoeba")
    parameters = metrics()["parameters"]
    return [
        (
            "README.md",
            f"The shipped model ({parameters / 1e6:.1f}M parameters) scores {test} BLEU greedy and "
            f"{test4} with beam 4 on the Tatoeba test ({n_test:,} pairs)",
        ),
        ("README.md", f"({tenths(news)} BLEU on WMT news)"),
        ("docs/design.md", f"{capitals} BLEU on capitals read in sentence case, against {typed} fed as typed"),
        ("docs/training-log.md", f"({parameters:,} parameters:"),
        ("docs/training-log.md", f"| {n_test:,} | {test} |"),
        ("docs/training-log.md", f"| {test4} |"),
        ("docs/training-log.md", f"| {dev} |"),
        ("docs/training-log.md", f"| {dev4} |"),
        ("docs/training-log.md", f"| {news} |"),
        ("docs/training-log.md", f"against all its translations | 864 | {dev_once} |"),
        ("docs/training-log.md", f"| {dev4_once} |"),
        ("docs/training-log.md", f" / {dev_once} |"),
        ("docs/training-log.md", f"| {news4} |"),
        ("docs/training-log.md", f"scores {test} greedy and {test4} with beam 4"),
        ("docs/training-log.md", f"| {test} (beam 4: {test4}) |"),
        ("docs/training-log.md", f"{capitals} (99%); {typed} fed to the model as typed"),
        ("docs/training-log.md", f"(dev-news {tenths(news)} BLEU)"),
        (
            "docs/training-log.md",
            f"({tenths(by_length['11-20'])} BLEU at 11–20 words, {tenths(by_length['6-10'])} at 6–10)",
        ),
        ("docs/training-log.md", " / ".join(str(by_length[n]) for n in by_length)),
    ]


def flat(text):
    return re.sub(r"\s+", " ", text.replace("**", ""))


def history_quotes():
    """(doc, text) from the training histories beside the shipped model, as `quotes`."""
    own = json.loads((MODEL / "training_snapshots.json").read_text(encoding="utf-8"))["snapshots"]
    scratch = json.loads((MODEL / "from_scratch_snapshots.json").read_text(encoding="utf-8"))["snapshots"]
    return [
        ("docs/how-it-learned.md", f"starts at the fifth part's first step ({own[0]['step']:,})"),
        (
            "docs/how-it-learned.md",
            f"for {scratch[-1]['minutes']:.0f} minutes on one CPU thread ({scratch[-1]['step']:,} steps)",
        ),
    ]


@pytest.mark.parametrize("doc, text", quotes())
def test_numbers_quoted_in_the_docs_are_the_shipped_models(doc, text):
    found = flat(text) in flat((ROOT / doc).read_text(encoding="utf-8"))
    assert found, f"{doc} should say: {text}"


def test_numbers_quoted_from_the_training_histories_are_the_shipped_models():
    """Read in the test, not when the tests are collected: the histories are megabytes of JSON, which each pytest
    process would parse."""
    for doc, text in history_quotes():
        test_numbers_quoted_in_the_docs_are_the_shipped_models(doc, text)


def head_importance_quotes():
    """(doc, text) from the shipped model's head_importance.json (`training.head_importance`), as `quotes`."""
    importance = json.loads((MODEL / "head_importance.json").read_text(encoding="utf-8"))
    names = {"encoder": "encoder", "decoder": "decoder", "cross": "cross-attention"}
    drops = sorted(
        (drop, names[kind], layer, head)
        for kind, grid in importance["drop"].items()
        for layer, row in enumerate(grid, 1)
        for head, drop in enumerate(row, 1)
    )
    cheap = [d for d in drops if d[0] <= 0.1]
    helping = [d for d in drops if d[0] < 0]
    best, kind, layer, head = drops[0]
    return [
        ("docs/training-log.md", f"With every head, dev BLEU on these {importance['n']} pairs is {importance['bleu']}"),
        *[("docs/training-log.md", f"- {d:.2f} ({k} layer {la}, head {h})") for d, k, la, h in drops[:-6:-1]],
        (
            "docs/training-log.md",
            f"{len(cheap)} of the {len(drops)} heads can go for 0.1 BLEU or less, and {len(helping)} of those even "
            f"help when switched off (up to +{-best:.2f} BLEU, {kind} layer {layer}, head {head})",
        ),
    ]


def test_numbers_quoted_from_the_head_importance_are_the_shipped_models():
    for doc, text in head_importance_quotes():
        test_numbers_quoted_in_the_docs_are_the_shipped_models(doc, text)


def test_the_shipped_model_card_is_made_from_its_directory(tmp_path):
    import shutil

    from modeldir.card import write_model_card

    copy = tmp_path / "model"
    shutil.copytree(MODEL, copy, ignore=shutil.ignore_patterns("*.safetensors", "README.md"))
    written = write_model_card(copy).read_text(encoding="utf-8")
    assert written == (MODEL / "README.md").read_text(encoding="utf-8"), (
        "assets/model/README.md is stale: python -m modeldir.card assets/model"
    )


# ---- Numbers that come from the benchmarks ----

RESULTS = ROOT / "bench" / "results"
NUMBER = r"~?\d[\d,.]*(?:–\d[\d.]*)?"  # 9, 1,058, ~700, 8.5–9.8
BENCH_NUMBER = re.compile(rf"({NUMBER}(?:(?:, | / | and )(?:{NUMBER}|—))*) ?(?:ms|kB|MB)\b")
CHECKED_FOR_BENCH_NUMBERS = ["README.md", "docs/design.md", "docs/deployment.md", "docs/app.md", "docs/training.md"]


def bench_result(name):
    """bench/results/NAME.json: the run of a benchmark saved with `--save NAME`, where the docs' numbers come from."""
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


def latency_table(result):
    """docs/app.md's table of the page's clicks, made from a saved `bench.app_latency --browser` run."""
    rows = [
        f"| {case} | {numbers['p50_ms']:.0f} | {numbers['requests']} |" for case, numbers in result["browser"].items()
    ]
    return "\n".join(["| click → figure on the page | p50 ms | requests |", "|---|---|---|", *rows])


def bench_quotes():
    """(doc, text) that each doc must hold, its numbers read from bench/results/ as `quotes` reads metrics.json."""
    app = bench_result("app_latency")
    payload, browser = app["payload"], app["browser"]
    float16, float32 = bench_result("decode_latency-float16"), bench_result("decode_latency-float32")
    cached16, cached32 = float16["modes"][0]["p50_ms"], float32["modes"][0]["p50_ms"]
    first_opening = browser["map: open a box, first opening (its vectors asked)"]["p50_ms"]
    rules, rules_before = bench_result("decode_latency-rules"), bench_result("decode_latency-rules-before")
    return [
        (
            "docs/app.md",
            f"{payload['12 words']['kB']} kB for a 12-word sentence, {payload['40 tokens']['kB']} kB for 40 tokens",
        ),
        ("docs/app.md", latency_table(app)),
        ("docs/app.md", f"asks the server once for its vectors ({first_opening:.0f} ms"),
        ("README.md", f"{cached16:.0f} ms per sentence (p50) on 2 CPU cores in float16"),
        (
            "docs/design.md",
            f"cached greedy decoding of the shipped model takes {cached16} ms p50 in float16 against "
            f"{cached32} ms in float32",
        ),
        (
            "docs/design.md",
            f"a 12-word sentence's payload is {payload['12 words']['kB']} kB, a 40-token one's "
            f"{payload['40 tokens']['kB']} kB ({payload['40 tokens']['kB_gzip']:.0f} kB gzipped), "
            f"against a goal of {app['payload_goal_kB']:.0f} kB",
        ),
        ("docs/deployment.md", f"a 40-token sentence's: {payload['40 tokens']['kB_gzip']} kB"),
        *serving_quotes(bench_result("app_throughput")),
        *(start_quote(name, bold) for name, bold in (("app_start-before", False), ("app_start", True))),
        ("README.md", f"it answers about {bench_result('app_start')['page_answers_s']:.0f} s after it starts"),
        *(rules_latency_quote(name, label) for name, label in RULES_RUNS),
        *rules_cost_quotes(rules, rules_before),
    ]


RULES_RUNS = (
    ("decode_latency-rules-before", "made-up words left as the model writes them"),
    ("decode_latency-rules", "**made-up words looked for (shipped)**"),
)


def rules_latency_quote(name, label):
    """docs/benchmarks.md's row of the saved `bench.decode_latency --rules` run NAME: p50 / p95 ms of each mode."""
    cells = " | ".join(f"{mode['p50_ms']:.1f} / {mode['p95_ms']:.1f}" for mode in bench_result(name)["modes"])
    return "docs/benchmarks.md", f"| {label} (`bench/results/{name}.json`) | {cells} |"


def rules_cost_quotes(rules, before):
    """docs/design.md's and docs/benchmarks.md's words on what looking for made-up words costs greedy decoding and
    beam search."""
    (greedy, _, beam, _), (greedy_before, _, beam_before, _) = (
        [mode["p50_ms"] for mode in run["modes"]] for run in (rules, before)
    )
    return [
        ("docs/design.md", f"takes {greedy} ms p50 with made-up words looked for against {greedy_before} ms without"),
        (
            "docs/benchmarks.md",
            f"takes {greedy / greedy_before:.1f} times as long on these news sentences ({greedy} against "
            f"{greedy_before} ms p50)",
        ),
        ("docs/benchmarks.md", f"beam search {beam / beam_before:.1f} times ({beam} against {beam_before} ms)"),
    ]


def start_quote(name, bold):
    """docs/benchmarks.md's row of the saved `bench.app_start` run NAME: seconds to the page, to a translation, CPU."""
    run = bench_result(name)
    cell = "**{} s**" if bold else "{} s"
    seconds = " | ".join(cell.format(run[key]) for key in ("page_answers_s", "first_translation_s", "cpu_s"))
    return "docs/benchmarks.md", f"`bench/results/{name}.json`) | {seconds} |"


def serving_quotes(run):
    """The rows of docs/benchmarks.md's table of the saved light-client run (`bench.app_throughput`)."""
    rows = {(mode, row["clients"]): row for mode in run["modes"] for row in run["modes"][mode]["rows"]}

    def cells(mode, key, unit=""):
        return " | ".join(f"{rows[(mode, clients)][key]}{unit}" for clients in (1, 4, 16))

    top = rows[("batched", 16)]
    speed = cells("batched", "sentences_per_s").rsplit(" | ", 1)[0]
    cpu = cells("batched", "server_cpu_ms_per_request", " ms").rsplit(" | ", 1)[0]
    return [
        (
            "docs/benchmarks.md",
            f"| batched, decoded apart: sentences/s | {speed} | {top['sentences_per_s']} "
            f"(**{top['speedup_vs_one_client']}×**) |",
        ),
        (
            "docs/benchmarks.md",
            f"| batched, decoded apart: server CPU per request | {cpu} | **{top['server_cpu_ms_per_request']} ms** |",
        ),
        (
            "docs/benchmarks.md",
            f"| each alone: server CPU per request | {cells('unbatched', 'server_cpu_ms_per_request', ' ms')} |",
        ),
        ("docs/benchmarks.md", f"commit {run['machine']['commit']}; the server's CPU includes the decoding"),
    ]


def setting_quotes():
    """(doc, text) quoting a size that is a setting or a file, not a measurement: read from where it is set."""
    from bench.decode_latency import GOAL_GREEDY_P50_MS
    from bench.model_shapes import GOAL_SIZE_MB
    from deploy.process import MMAP_THRESHOLD
    from deploy.settings import Settings

    defaults = Settings.from_environment({})
    weights_mb = (MODEL / "model.safetensors").stat().st_size / 1e6
    return [
        ("docs/deployment.md", f"| request body | {defaults.body_mb} MB, refused with HTTP 413"),
        ("docs/deployment.md", f"| {defaults.inspections_mb} MB of inspections"),
        ("docs/deployment.md", f"| {defaults.payloads_mb} MB of gzip JSON"),
        ("docs/deployment.md", f"maps every block of {MMAP_THRESHOLD // 1024} kB or more on its own"),
        ("docs/deployment.md", f"files over 10 MB (the weights, {weights_mb:.1f} MB)"),
        ("docs/training.md", f"within the shipped model's {GOAL_SIZE_MB:.0f} MB and {GOAL_GREEDY_P50_MS:.0f} ms"),
    ]


@pytest.mark.parametrize("doc, text", bench_quotes() + setting_quotes())
def test_benchmark_numbers_quoted_are_those_of_the_saved_runs(doc, text):
    assert flat(text) in flat((ROOT / doc).read_text(encoding="utf-8")), (
        f"{doc} should say (from bench/results/): {text}"
    )


def numbers_with_units(flat_text):
    """Each latency or size in a text (a number or range before ms, kB or MB, lists "11 / 9 / 13 ms" split)."""
    groups = BENCH_NUMBER.findall(flat_text)
    return [n.lstrip("~") for group in groups for n in re.split(r", | / | and ", group) if n != "—"]


def quoted_bench_numbers(text):
    """Each latency or size a doc's prose and tables quote (code left out)."""
    return numbers_with_units(flat(outside_code(text)))


def unsourced_bench_numbers(doc_text, sourced):
    """The latencies and sizes `doc_text` quotes outside the texts of `sourced` (those read from bench/results/)."""
    text = flat(outside_code(doc_text))
    for quote in sourced:
        text = text.replace(flat(quote), " ")
    return numbers_with_units(text)


@pytest.mark.parametrize("doc", CHECKED_FOR_BENCH_NUMBERS)
def test_every_benchmark_number_quoted_comes_from_a_saved_run(doc):
    """Not "appears somewhere in benchmarks.md": each latency or size is one of `bench_quotes`, read from its entry."""
    sourced = [text for quoted_in, text in bench_quotes() + setting_quotes() if quoted_in == doc]
    unsourced = unsourced_bench_numbers((ROOT / doc).read_text(encoding="utf-8"), sourced)
    assert not unsourced, f"{doc} quotes {unsourced} (ms, kB or MB) that no bench/results/ entry gives"


def test_a_number_quoted_outside_the_saved_runs_is_found():
    assert quoted_bench_numbers("from 37–44 ms to 14–18 ms; 11 / 9 / — ms; `9 ms`; 106 kB") == [
        "37–44",
        "14–18",
        "11",
        "9",
        "106",
    ]
    doc = "The payload is 40.5 kB. Decoding takes 9 ms, and 12 / 14 ms before."
    assert unsourced_bench_numbers(doc, ["The payload is 40.5 kB.", "Decoding takes 9 ms"]) == ["12", "14"]


# ---- What the docs list ----


def test_api_md_names_every_training_config():
    from training.configs import CONFIGS

    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    listed = re.search(r"`configs\.py` \(([^)]*)\)", api).group(1)
    assert re.findall(r"`(\w+)`", listed) == list(CONFIGS)


PACKAGES = [package for package in BELOW if package != "app"]  # the project's folders of modules


def package_rows(text):
    """{package: its row's text} of a markdown table whose first cell names packages as `name/`."""
    rows = {}
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|")
        for package in re.findall(r"`(\w+)/`", cells[0]) if len(cells) > 1 else []:
            rows[package] = "|".join(cells[1:])
    return rows


def unlisted_modules(text):
    """The project's modules (`recipes/deepen.py` or `deepen.py`) that a doc's table of packages does not name."""
    rows = package_rows(text)
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT / package).as_posix()
            if path.name != "__init__.py" and not re.search(rf"`({relative}|{path.name})`", rows.get(package, "")):
                missing.append(f"{package}/{relative}")
    return missing


def test_the_table_of_packages_names_every_module():
    assert not unlisted_modules((ROOT / "docs" / "api.md").read_text(encoding="utf-8")), "docs/api.md misses modules"


# ---- The translations the docs' code examples promise ----

TRANSLATE_EXAMPLE = re.compile(r"^(?P<code>.*\.translate\(.*\))\s+# (?P<said>['\"\[].*)$")


def translation_examples():
    """(doc, code, the output its comment says) of every line of a doc's code that calls `.translate(` and says
    what comes out as a Python literal."""
    for doc in (README, ROOT / "docs" / "api.md"):
        for line in doc.read_text(encoding="utf-8").splitlines():
            match = TRANSLATE_EXAMPLE.match(line.strip())
            if match:
                yield doc.name, match["code"], match["said"]


def test_the_docs_translation_examples_say_what_the_shipped_model_writes():
    from transformer import Translator

    examples = list(translation_examples())
    assert len(examples) >= 3  # the README's line and api.md's
    tr = Translator.load(MODEL)
    for doc, code, said in examples:
        code = re.sub(r'Translator\.load\("assets/model"\)', "tr", code)
        assert eval(code, {"tr": tr}) == ast.literal_eval(said), f"{doc}: {code}"


def synced_latency_table(app_text):
    """docs/app.md with its table of the page's clicks made from bench/results/app_latency.json."""
    header = "| click → figure on the page |"
    before, rest = app_text.split(header, 1)
    after = rest.split("\n\n", 1)[1]
    return f"{before}{latency_table(bench_result('app_latency'))}\n\n{after}"


if __name__ == "__main__":
    synced = synced_reading_order(README.read_text(encoding="utf-8"))
    app_doc = ROOT / "docs" / "app.md"
    if sys.argv[1:] == ["--write"]:
        README.write_text(synced, encoding="utf-8")
        app_doc.write_text(synced_latency_table(app_doc.read_text(encoding="utf-8")), encoding="utf-8")
    for line, _, _ in reading_order_rows(synced):
        print(line)
