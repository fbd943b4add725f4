"""`mlgo-farm vocab ...`: train, validate, publish, retrain (Celery), promote, list, show, download."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any

from farm.answer import Answer, json_option
from farm.embeddings import KINDS
from farm.errors import InputError

log = logging.getLogger(__name__)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    from vocabgen.params import TrainParams

    names = [f.name for f in dataclasses.fields(TrainParams)]
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _store():
    from farm.objectstore import store_from_settings

    return store_from_settings()


def _train(args: argparse.Namespace) -> int:
    """`-o` is checked (replaceable, writable, not full) before any download or training, not after."""
    from farm.atomic import check_replaceable, check_writable
    from farm.config import load_settings
    from farm.progress import Stages
    from farm.signing import farm_key
    from farm.toolchain import Toolchain
    from vocabgen.build import MANIFEST, VOCAB, train_vocabulary, write_local
    from vocabgen.dataset import resolve_dataset
    from vocabgen.params import TrainParams, configured
    from vocabgen.training import ensure_pystow_home

    s = load_settings()
    params = TrainParams.from_dict(_params(args), configured(s))
    params.resolved(args.kind or "ir")  # checked before any download or training (the kind only picks a default)
    out = Path(args.output).absolute()
    check_replaceable(out, MANIFEST)
    check_writable(out.parent)
    key = farm_key(s)
    store = None if Path(args.dataset).is_dir() else _store()
    ds = resolve_dataset(args.dataset, args.kind, store, s.var_dir / "vocab" / "datasets")
    ensure_pystow_home(s.var_dir)
    with Stages(f"vocab train {ds.kind}") as on_epoch:
        data, manifest = train_vocabulary(ds, params, key, on_epoch=on_epoch, recipe=s.vocab.recipe)
    if not args.no_validate:
        manifest["validation"] = _validated(ds.kind, data, Toolchain.from_settings(s))
    write_local(out, data, manifest)
    h = manifest["metrics"]["holdout"]
    print(f"{out / VOCAB}: {ds.kind} dim {manifest['dimension']} sha256 {manifest['sha256'][:12]} "
          f"MRR {h.get('mrr', float('nan')):.3f} Hits@10 {h.get('hits_at_10', float('nan')):.3f} "
          f"({'validated' if 'validation' in manifest else 'not validated'}; manifest {out / MANIFEST})")
    return 0


def _validated(kind: str, data: bytes, toolchain) -> dict[str, Any]:
    """The validation report of exactly `data` (checked from a private copy)."""
    import tempfile

    from vocabgen.build import VOCAB
    from vocabgen.validate import validate_vocab

    with tempfile.TemporaryDirectory(prefix="mlgo-farm-vocab-") as tmp:
        (Path(tmp) / VOCAB).write_bytes(data)
        return validate_vocab(kind, Path(tmp) / VOCAB, toolchain)


def _validate(args: argparse.Namespace) -> int:
    from farm.toolchain import Toolchain
    from vocabgen.validate import validate_vocab

    report = validate_vocab(args.kind, Path(args.vocab), Toolchain.from_settings(),
                            [Path(p) for p in args.sample] or None)
    print(json.dumps(report, indent=2))
    return 0


def _publish(args: argparse.Namespace) -> int:
    """Validation is run again here: a manifest's own validation record is only the user's word.

    Its metrics and lineage are taken only with the farm's signature over them and these bytes,
    checked first (it is cheap; LLVM is not).
    """
    from farm.config import load_settings
    from farm.locks import publish_lock
    from farm.signing import farm_key, verify
    from farm.toolchain import Toolchain
    from vocabgen.build import read_local
    from vocabgen.dataset import check_kind
    from vocabgen.publish import publish, summary

    s = load_settings()
    data, manifest = read_local(Path(args.vocab_dir))
    kind = check_kind(str(manifest.get("kind")))
    key = farm_key(s)
    verify(data, manifest, key)
    manifest["validation"] = _validated(kind, data, Toolchain.from_settings(s))
    store = _store()
    with publish_lock(store, s.celery.broker_url, settings=s):
        result = publish(store, data, manifest, key=key)
    print(summary(result))
    from farm.artifacts.verdict import POLICY_SIZE

    if POLICY_SIZE in ((result.get("gate") or {}).get("pending") or ()):
        # a publish by hand starts no chain (the nightly one does): say what settles it
        print(f"  its {POLICY_SIZE} check runs when the inliner policy is retrained with it: "
              f"mlgo-farm policy retrain --vocab {result['version']} (or any later `policy retrain`, which takes "
              f"the newest vocabulary)")
    return 0


def _promote(args: argparse.Namespace) -> int:
    """The operator's override of the promotion gate, under the publish lock; the reason is recorded."""
    from farm.artifacts import VOCABULARIES

    print(VOCABULARIES.promote_as_operator(_store(), args.kind, args.version, args.reason))
    return 0


def _retrain(args: argparse.Namespace) -> int:
    from farm.celery_app import app
    from farm.client import submit, wait_for
    from pipeline import VOCAB_STEPS as CHAIN_STEPS  # a verb starts the pipeline (tests/test_layout.py)
    from pipeline import start_vocab_retrain as enqueue_retrain
    from vocabgen.dataset import check_dataset_ref
    from vocabgen.params import TrainParams

    params = _params(args)
    TrainParams.from_dict(params).resolved(args.kind)  # the workers' own check, before anything is enqueued
    dataset = args.dataset
    if Path(dataset).is_dir():
        dataset = str(Path(dataset).absolute())
    else:
        check_dataset_ref(dataset)
    res = submit(app, lambda: enqueue_retrain(args.kind, dataset, params), "the retrain")
    if not args.wait:
        return Answer({"task_id": res.id}, lambda f: f["task_id"])
    from vocabgen.publish import retrained

    return retrained(wait_for(app, res, args.timeout, CHAIN_STEPS, desc="vocab retrain"))


def _fmt(x: Any, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _composed(coverage: Any) -> str:
    """`Opcodes 6280`: the entries composed from their parts (vocabgen/training.py), per section that has any;
    `0` when none was, `-` for a version made before composition was recorded (IR never composes)."""
    if not isinstance(coverage, dict) or not any(isinstance(c, dict) and "composed" in c for c in coverage.values()):
        return "-"
    parts = [f"{s} {c['composed']}" for s, c in coverage.items() if isinstance(c, dict) and c.get("composed")]
    return ", ".join(parts) or "0"


def _list(args: argparse.Namespace) -> int:
    from farm.artifacts import VOCABULARIES

    rows = [v for v in VOCABULARIES.read_index(_store()) if args.kind in (None, v.get("kind"))]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from vocabgen.layout import coverage_line

    # STATE as the dashboard shows it: latest (what `latest` serves), candidate (held back by the gate), superseded
    head = ("KIND", "VERSION", "STATE", "DIM", "DATASET", "PUBLISHED", "MRR", "HITS@10", "ANALOGY",
            "COMPOSED", "COVERAGE (trained/total)")
    table = [head] + [
        (v["kind"], v["version"], str(v.get("state") or "-"), str(v["dimension"]), str(v.get("dataset_id") or "-"),
         v["published_at"],
         _fmt(v.get("mrr")), _fmt(v.get("hits_at_10")), _fmt(v.get("analogy")),
         _composed(v.get("coverage")), coverage_line(v.get("coverage")).replace(" trained", ""))
        for v in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


#: Filler names `vocab show` prints per section (MIR sections have thousands; the manifest lists all).
_SHOW_FILLER = 40


def _show(args: argparse.Namespace) -> int:
    """The manifest as JSON on stdout (scripts read it), and on stderr, for people, the coverage per
    section and the filler entries: vectors that are their section's mean, not trained."""
    from farm.artifacts import VOCABULARIES
    from farm.jsonio import dumps
    from vocabgen.layout import coverage_line

    manifest = VOCABULARIES.show(_store(), args.kind, args.version)
    print(dumps(manifest), end="")
    coverage = manifest.get("coverage")
    print(f"{manifest.get('version', args.version)}: {coverage_line(coverage, args.kind)}", file=sys.stderr)
    if coverage_line(coverage).endswith("?"):
        print("  (made before coverage was recorded: which entries are filler is unknown)", file=sys.stderr)
        return 0
    for section, c in coverage.items():
        filler = c.get("filler") or []
        if not filler:
            continue
        more = f" ... and {len(filler) - _SHOW_FILLER} more (coverage.{section}.filler)" \
            if len(filler) > _SHOW_FILLER else ""
        print(f"  filler in {section} ({len(filler)}, the section's mean vector, never trained): "
              f"{', '.join(filler[:_SHOW_FILLER])}{more}", file=sys.stderr)
    return 0


def _download(args: argparse.Namespace) -> Answer:
    """The output's directory is proven writable (and not full) before anything is fetched; a device or a FIFO
    (`-o /dev/null`) is written to, never replaced, and needs no writable directory."""
    from farm.artifacts import VOCABULARIES
    from farm.atomic import check_output_file
    from vocabgen.publish import llvm_flag

    out = Path(args.output).absolute()
    if out.is_dir():
        raise InputError(f"{out} is a directory: give a file name")
    check_output_file(out)
    manifest = VOCABULARIES.download(_store(), args.kind, args.version, out)
    print(f"{args.kind} {manifest['version']} -> {out} (sha256 {manifest['sha256'][:12]} verified)", file=sys.stderr)
    return Answer({"kind": args.kind, "version": manifest["version"], "output": str(out), "sha256": manifest["sha256"],
                   "flag": llvm_flag(args.kind, out)}, lambda f: f["flag"])


def _training_options() -> argparse.ArgumentParser:
    from vocabgen.params import OPTIMIZERS

    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("training (defaults: the recipe recorded in every manifest)")
    g.add_argument("--dim", type=int, help="vector dimension (default 75 for ir, 100 for mir)")
    g.add_argument("--epochs", type=int, help="training epochs (default: the [vocab] recipe's, where it "
                   "trains: 1000 nightly, 100 demo)")
    g.add_argument("--margin", type=float, help="margin of the ranking loss (default 1.0)")
    g.add_argument("--optimizer", choices=OPTIMIZERS, help="optimizer (default Adam)")
    g.add_argument("--lr", type=float, help="learning rate (default 0.01)")
    g.add_argument("--batch-size", dest="batch_size", type=int, help="batch size (default 256)")
    g.add_argument("--negatives", type=int, help="negative samples per positive (default 1)")
    g.add_argument("--seed", type=int, help="random seed (default 0)")
    g.add_argument("--holdout", type=float, help="fraction held out for link prediction (default 0.1)")
    g.add_argument("--no-warm-start", dest="warm_start", action="store_const", const=False,
                   help="a retrain starts from random vectors, not from the latest version's (vocabgen/warm.py)")
    g.add_argument("--warm-epochs", dest="warm_epochs", type=int,
                   help="epochs of a retrain that starts from the latest version's vectors (default: the [vocab] "
                        "recipe's, where it trains: 100 nightly, 10 demo)")
    return p


def register(sub: argparse._SubParsersAction) -> None:
    """Add this role's verbs to `mlgo-farm`."""
    p = sub.add_parser("vocab", help="train, validate, publish and download IR2Vec/MIR2Vec vocabularies")
    vsub = p.add_subparsers(dest="vocab_verb", metavar="ACTION", required=True)
    training = _training_options()

    t = vsub.add_parser("train", parents=[training], help="train a vocabulary from a dataset")
    t.add_argument("dataset", help="triplet dataset directory (mlgo-farm triplets), or a dataset id or `latest` "
                                   "in the store")
    t.add_argument("-o", "--output", required=True, help="output directory (vocab.json + manifest.json)")
    t.add_argument("--kind", choices=KINDS, help="expected dataset kind (needed for `latest`)")
    t.add_argument("--no-validate", action="store_true", help="skip the LLVM validation")
    t.set_defaults(func=_train)

    v = vsub.add_parser("validate", help="check a vocabulary file the way publishing does")
    v.add_argument("vocab", help="vocab.json")
    v.add_argument("--kind", choices=KINDS, required=True)
    v.add_argument("--sample", action="append", default=[], help="sample module (.bc for ir, .mir for mir)")
    v.set_defaults(func=_validate)

    u = vsub.add_parser("publish", help="validate a trained vocabulary directory with LLVM again and publish it")
    u.add_argument("vocab_dir", help="directory written by `vocab train`")
    u.set_defaults(func=_publish)

    r = vsub.add_parser("retrain", parents=[training, json_option()],
                        help="enqueue the Celery chain train -> validate -> publish")
    r.add_argument("--kind", choices=KINDS, required=True)
    r.add_argument("--dataset", default="latest", help="dataset id in the store, `latest`, or a local directory")
    r.add_argument("--wait", action="store_true", help="wait for the published version")
    r.add_argument("--timeout", type=float, default=3600, help="seconds to wait with --wait (default 3600)")
    r.set_defaults(func=_retrain)

    pr = vsub.add_parser("promote", help="make a listed version latest whatever the promotion gate said "
                                         "(recorded with the reason)")
    pr.add_argument("kind", choices=KINDS)
    pr.add_argument("version", help="a version listed by `vocab list`")
    pr.add_argument("--reason", required=True, help="why (recorded in the index with who and when)")
    pr.set_defaults(func=_promote)

    ls = vsub.add_parser("list", help="list published versions")
    ls.add_argument("--kind", choices=KINDS)
    ls.add_argument("--json", action="store_true", help="print the index entries as JSON")
    ls.set_defaults(func=_list)

    sh = vsub.add_parser("show", help="print a version's manifest")
    sh.add_argument("--kind", choices=KINDS, required=True)
    sh.add_argument("--version", default="latest")
    sh.set_defaults(func=_show)

    d = vsub.add_parser("download", parents=[json_option()],
                        help="download a version (sha256 verified) and print the LLVM flag")
    d.add_argument("--kind", choices=KINDS, required=True, help="ir (IR2Vec) or mir (MIR2Vec)")
    d.add_argument("--version", default="latest",
                   help="a version name as `vocab list` shows it, or latest (default: the one in force)")
    d.add_argument("-o", "--output", required=True,
                   help="file to write the vocabulary JSON to (written whole or not at all)")
    d.set_defaults(func=_download)
