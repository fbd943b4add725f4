"""`mlgo-farm policy train` and `policy heldout`: the inliner-for-size trainer and its held-out table.

    mlgo-farm policy train -o var/policy/inline.onnx     # the nightly recipe on the declared splits
    mlgo-farm policy heldout store:latest                # any policy against the heuristic, held out
    mlgo-farm policy splits                              # the code the splits' packages share, each decided
    mlgo-farm policy train-evict --train P --validation V -o evict.onnx  # regalloc eviction for speed (-O2)

Packages are Debian source packages compiled to corpora once (cached under `<var>/policy/corpus/`),
or `NAME=DIR` for a corpus directory (policytrain/trainer.py `resolve_splits`). Compiles run in
threads (`--jobs`) or as Celery tasks (`--celery`), which is how a farm adds workers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from farm.errors import EXIT_SIZE_CHECK, FarmError, InputError
from policytrain.problem import INLINE_SIZE


def _fanout(args: argparse.Namespace, settings, toolchain):
    from policytrain.explore import ExploreCache
    from policytrain.fanout import celery_fanout, thread_fanout

    if args.celery:
        return celery_fanout(args.timeout)
    return thread_fanout(toolchain, ExploreCache.under(settings.var_dir), args.jobs)


def _check_output(output: Path) -> None:
    """Where `policy train` writes, checked before it trains: `-o` naming a directory was found when the model was
    written, an hour of training later."""
    from farm.atomic import check_file_set

    beside = [output.with_suffix(s) for s in (".json", ".npz", ".weights")]
    for path in (output, *beside):
        if path.is_dir():
            raise InputError(f"output {path} is a directory: -o names the model's file (MODEL.onnx; MODEL.json, "
                             "MODEL.npz and MODEL.weights are written beside it)")
    if output.suffix != ".onnx":
        raise InputError(f"output {output} must end in .onnx")
    check_file_set([output, *beside])  # a FIFO among them was found when the model was written


def _train(args: argparse.Namespace) -> int:
    """Every argument is checked before anything compiles, cheapest first: the output, the recipe, the splits'
    names and corpus directories (policytrain/corpora.py `plan_splits`), LLVM, the vocabulary; then the Debian
    packages' sources and corpora, and the training."""
    from farm.config import load_settings
    from farm.progress import say
    from farm.toolchain import Toolchain
    from policytrain import heldout, trainer
    from policytrain.corpora import named
    from policytrain.recipes import recipe

    settings = load_settings()
    output = Path(args.output)
    _check_output(output)
    rec_name = args.recipe or settings.policy.recipe
    rec = recipe(rec_name)
    if args.no_evaluation and args.evaluation is not None:
        raise InputError("--no-evaluation and --evaluation: give one of them")
    named("--evaluation", args.evaluation, "leave it out for the declared split, or --no-evaluation to train "
          "without a held-out table")
    var = Path(settings.var_dir)
    plan = trainer.plan_splits(args.train, args.validation, "" if args.no_evaluation else args.evaluation, var, rec)
    tc = Toolchain.from_settings(settings)
    vocab = None
    if args.vocab:
        from policyhost.launcher import resolve_vocab

        vocab = resolve_vocab(args.vocab, INLINE_SIZE.advisor)
    version = vocab.stem if args.vocab and args.vocab.startswith("store:") else None  # (the store's file names it)
    splits = trainer.build_splits(plan, var, tc, desc="policy train")
    record = trainer.train_to(output, tc, splits, rec_name, _fanout(args, settings, tc), vocab=vocab,
                              vocab_version=version, progress=say, cap=settings.gate.policy_cap, desc="policy train")
    try:
        heldout.check_complete(record["heldout"])
    except FarmError as e:
        raise type(e)(f"{e}; the model is written to {output}") from None
    return 0


def _train_evict(args: argparse.Namespace) -> int:
    """Regalloc eviction for speed (policytrain/evict_train.py): the output, the recipe and the packages checked
    first (policytrain/evict_data.py), then the corpora built and the training run."""
    from farm.config import load_settings
    from farm.progress import say
    from farm.toolchain import Toolchain
    from policytrain import evict_data, evict_train
    from policytrain.corpora import comma_list

    settings = load_settings()
    output = Path(args.output)
    _check_output(output)
    rec = evict_train.recipe(args.recipe)
    train, validation = comma_list(args.train), comma_list(args.validation)
    evict_data.check_splits(train, validation)
    embedder = None
    if args.mir_vocab:
        from policytrain.evict_context import FunctionEmbedder

        embedder = FunctionEmbedder.load(args.mir_vocab)
    tc = Toolchain.from_settings(settings)
    var, desc = Path(settings.var_dir), "policy train-evict"
    record = evict_train.train_to(output, tc, evict_data.packages(train, var, tc, rec.max_modules, desc),
                                  evict_data.packages(validation, var, tc, None, desc), args.recipe,
                                  jobs=args.jobs, progress=say, desc=desc, embedder=embedder)
    val = record["validation"]
    say(f"wrote {output}: validation {'no ratio' if val is None else f'{val:.4f}x'} the heuristic's RegAllocScore, "
        f"chosen at {record['chosen']}")
    return 0


def _trained_with(record: dict) -> str | None:
    """The vocabulary a local model's training record names: its store version, else the file if it is still there."""
    if record.get("vocab_version"):
        return f"store:{record['vocab_version']}"
    if record.get("vocab") and Path(record["vocab"]).is_file():
        return str(record["vocab"])
    return None


def _heldout(args: argparse.Namespace) -> int:
    """The evaluation split's table (or another declared split's, --split) for an ONNX model (a file, or
    store:VERSION) against the heuristic."""
    from farm.config import load_settings
    from farm.toolchain import Toolchain
    from policyhost.release import record_beside, seen_packages
    from policytrain import heldout, trainer
    from policytrain.corpora import corpora, given_corpora, named
    from policytrain.recipes import recipe

    named("--evaluation", args.evaluation, f"or leave it out for the {args.split} split")
    settings = load_settings()
    tc = Toolchain.from_settings(settings)
    model, vocab = args.model, args.vocab
    if model.startswith("store:"):
        from policyhost.published import resolve_published

        model, record, vocab = resolve_published(model, INLINE_SIZE.advisor, args.vocab, tc)
    else:
        from policyhost.launcher import resolve_vocab
        from policyhost.release import check_model

        record = record_beside(Path(model)) or {}  # none: a model from elsewhere, nothing to check it against
        vocab = vocab or _trained_with(record)
        if vocab:
            vocab = str(resolve_vocab(vocab, INLINE_SIZE.advisor))
        # a model that reads embeddings measured without its vocabulary fails every compile with a decision, and
        # the table would show 1.0000x over the modules without one: one line instead, before anything compiles
        try:
            check_model(Path(model), tc, INLINE_SIZE.advisor, Path(vocab) if vocab else None)
        except InputError as e:
            if vocab:
                raise
            raise type(e)(f"{e} (--vocab: the one it was trained with)") from None
    names = trainer.specs(args.split, args.evaluation)
    seen = sorted(set(seen_packages(record)) & {n.partition("=")[0] for n in names})
    if seen:
        raise InputError(f"{args.model} was trained or validated on {', '.join(seen)}: a held-out table measures only "
                         "packages the policy never saw (choose them with --split or --evaluation)")
    var = Path(settings.var_dir)
    given = given_corpora({"evaluation": names}, var)  # every NAME=DIR read before a Debian corpus is compiled
    (evaluation,) = corpora([[(n, given.get(("evaluation", n)), None) for n in names]], var, tc, "policy heldout",
                            args.thinlto)
    splits = trainer.Splits((), (), evaluation)
    fan = _fanout(args, settings, tc)
    t = trainer.Trainer(tc, splits, recipe("smoke"), fan, vocab=Path(vocab) if vocab else None)
    table = heldout.heldout_table(t, None, model=str(model), desc="policy heldout")
    print(json.dumps(table, indent=2) if args.json else heldout.format_table(table, settings.gate.policy_cap),
          flush=True)
    heldout.check_complete(table)  # the table shows which packages; the exit status and one line say it failed
    return 0


def _splits(args: argparse.Namespace) -> int:
    """The packages of each split (the declared ones, or those the options name, as `policy train` takes them; the
    decision packages too, which recipes are compared on) and every overlap of code between packages of different
    splits (policytrain/overlap.py), decided or not."""
    from farm.config import load_settings
    from policytrain import overlap, splitdata
    from policytrain.trainer import check_names, specs

    planned = {s: [n for n in specs(s, getattr(args, s.replace("-", "_"))) if "=" not in n] for s in splitdata.SPLITS}
    check_names(planned)
    found = overlap.between(planned, Path(load_settings().var_dir) / "debsrc")
    for name, names in planned.items():
        print(f"{name}: {', '.join(names)}")
    print(f"{len(found)} pair(s) of files across splits share code")
    for o in found:
        print(f"{'decided' if o.packages in splitdata.OVERLAPS else 'UNDECIDED'}: {o.said()}")
    overlap.check(found, splitdata.OVERLAPS)
    return 0


def _train_bc(args: argparse.Namespace) -> int:
    from farm.toolchain import Toolchain
    from policytrain import warmstart

    tc = Toolchain.from_settings()
    vocab, version = args.vocab, None
    if vocab and vocab.startswith("store:"):  # recorded, so that `policy publish` names the vocabulary
        from policyhost.launcher import resolve_vocab

        path = resolve_vocab(vocab, INLINE_SIZE.advisor)
        vocab, version = str(path), path.stem
    result = warmstart.train_from(
        Path(args.source), Path(args.output), tc,
        seed=args.seed, epochs=args.epochs, holdout=args.holdout, jobs=args.jobs,
        vocab=vocab, save_log=Path(args.save_log) if args.save_log else None, vocab_version=version,
    )
    print(json.dumps(result, indent=2))
    return 0


def _retrain(args: argparse.Namespace) -> int:
    from farm.answer import Answer
    from farm.celery_app import app
    from farm.client import submit, wait_for
    from pipeline import POLICY_STEPS as CHAIN_STEPS  # a verb starts the pipeline (tests/test_layout.py)
    from pipeline import start_policy_retrain as enqueue_retrain

    params = {"recipe": args.recipe, "max_modules": args.max_modules}
    corpus = str(Path(args.corpus).absolute()) if args.corpus else None
    res = submit(app, lambda: enqueue_retrain(args.vocab, corpus, params), "the policy retrain")
    if not args.wait:
        return Answer({"task_id": res.id}, lambda f: f["task_id"])
    from policyhost.publish import retrained

    return retrained(wait_for(app, res, args.timeout, CHAIN_STEPS, desc="policy retrain"), EXIT_SIZE_CHECK)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the trainer's verbs to `mlgo-farm policy` (the group the policy host's verbs are in)."""
    from farm.answer import json_option
    from farm.cli import fraction, positive_float, positive_int, verb_group
    from policyhost.cli import POLICY_HELP

    psub = verb_group(sub, "policy", POLICY_HELP)
    bc = psub.add_parser(
        "train-bc",
        help="behavioural cloning of LLVM's inlining heuristic on a corpus, exported to ONNX",
    )
    bc.add_argument("source", help="a corpus directory (corpus_description.json), a directory of C files, "
                    "or a decision log (.npz) saved by --save-log")
    bc.add_argument("-o", "--output", required=True, help="the .onnx model to write (plus MODEL.json metadata)")
    bc.add_argument("--seed", type=int, default=0)
    bc.add_argument("--epochs", type=positive_int, default=60)
    bc.add_argument("--holdout", type=fraction, default=0.2, help="fraction of modules held out for agreement")
    bc.add_argument("--jobs", type=positive_int, default=None, help="parallel compiles while logging (default: CPUs)")
    bc.add_argument("--vocab", help="IR2Vec vocabulary JSON: also log and learn from the embedding features")
    bc.add_argument("--save-log", help="also save the logged (features, inlining_default) pairs as .npz")
    bc.set_defaults(func=_train_bc)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--train", help="comma-separated packages to train on (Debian names or NAME=CORPUS_DIR; "
                        "default: the train split of policytrain/splitdata.py)")
    common.add_argument("--validation", help="packages that choose the best policy (default: the validation split)")
    common.add_argument("--evaluation", help="held-out packages of the final table (default: the evaluation split)")
    common.add_argument("--jobs", type=positive_int, default=2, help="parallel compiles in this process")
    common.add_argument("--celery", action="store_true", help="run the compiles as Celery tasks on the farm's workers")
    common.add_argument("--timeout", type=positive_float, default=7200, help="seconds a fan-out may take (--celery)")
    tr = psub.add_parser("train", parents=[common], help="train an inliner-for-size policy: explore, weighted "
                         "behavioural cloning, evolution strategies; print the held-out table")
    tr.add_argument("-o", "--output", required=True, help="the .onnx model to write (MODEL.json, MODEL.npz beside)")
    # checked when the verb runs (policytrain/recipes.py `recipe`): building the parser imports no numpy
    tr.add_argument("--recipe", help="how hard each stage works: a recipe of policytrain/recipes.py (cxx: C++, "
                    "what the nightly publishes; nightly: C; demo; smoke; the experiments docs/policy-journal.md "
                    "measured run through bench/policy_recipes.py); default: [policy] recipe, cxx")
    tr.add_argument("--vocab", help="IR2Vec vocabulary JSON (or store:VERSION): the policy also reads the callee "
                    "and caller embeddings (default: LLVM's features alone)")
    tr.add_argument("--no-evaluation", action="store_true", help="train without a held-out table, keeping the "
                    "evaluation packages unseen (an experiment's; later: mlgo-farm policy heldout MODEL)")
    tr.set_defaults(func=_train)
    ho = psub.add_parser("heldout", parents=[common], help="`.text` of an inliner policy against LLVM's heuristic "
                         "on the evaluation packages, each module at -Oz")
    ho.add_argument("model", help="an .onnx model, or store:latest / store:VERSION")
    ho.add_argument("--vocab", help="the vocabulary the model reads (default: a published policy's own)")
    ho.add_argument("--json", action="store_true", help="print the table as JSON")
    ho.add_argument("--split", choices=("evaluation", "decision", "validation", "retired", "cxx-evaluation",
                                        "cxx-validation", "cxx-decision"), default="evaluation",
                    help="the declared split to measure on when --evaluation is not given (default: evaluation; "
                    "decision: the packages recipes are compared on; retired: evaluation packages looked at too often "
                    "to be held out any more, policytrain/splitdata.py MAX_LOOKS)")
    ho.add_argument("--thinlto", action="store_true", help="build every package as a distributed ThinLTO build, the "
                    "policy in its backends, both sides linked (workers/thinlto.py); default: each file alone")
    ho.set_defaults(func=_heldout)
    ev = psub.add_parser("train-evict", help="train a regalloc eviction policy for speed (-O2): clone LLVM's default "
                         "rule, evolution strategies on RegAllocScore, the best on validation written as ONNX")
    ev.add_argument("--train", required=True, help="comma-separated packages to train on (Debian names, compiled at "
                    "-O2 once, or NAME=CORPUS_DIR of an -O2 corpus)")
    ev.add_argument("--validation", required=True, help="packages that choose the checkpoint (never trained on)")
    ev.add_argument("-o", "--output", required=True, help="the .onnx model to write (MODEL.json beside)")
    ev.add_argument("--recipe", default="small", help="how hard each stage works: small (default) or smoke")
    ev.add_argument("--jobs", type=positive_int, default=2, help="parallel compiles")
    ev.add_argument("--mir-vocab", help="a MIR2Vec vocabulary (vocab.json): the policy also reads the embedding of "
                    "each decision's function (policytrain/evict_context.py); such a model is served by "
                    "bench/evict_policies.py, not by policy-cc")
    ev.set_defaults(func=_train_evict)
    sp = psub.add_parser("splits", help="the packages of each split, and the code packages of different splits share "
                         "(fails on an overlap policytrain/data/splits.toml has no decision for)")
    from policytrain.splitdata import SPLIT_NAMES

    for what in SPLIT_NAMES:  # `policy train`'s, and the others
        sp.add_argument(f"--{what}", help=f"comma-separated Debian packages (default: the {what} split)")
    sp.set_defaults(func=_splits)
    rt = psub.add_parser("retrain", parents=[json_option()], help="enqueue the Celery chain train -> validate -> "
                         "publish -> size check of the inliner-for-size policy")
    rt.add_argument("--vocab", default="newest", help="IR vocabulary version in the store (default: newest, the "
                    "latest or a newer one waiting for its policy's size check)")
    rt.add_argument("--corpus", help="nightly training corpus directory (default: the vocabulary's dataset's "
                    "corpus), trained on beside [policy] train")
    rt.add_argument("--recipe", help="training recipe: cxx (C++), nightly (C), demo or smoke (default: [policy] "
                    "recipe, cxx)")
    rt.add_argument("--max-modules", type=positive_int, help="train on at most this many modules of the nightly "
                    "corpus (default: the recipe's cap on each training package: 12 in cxx, 50 in nightly)")
    rt.add_argument("--wait", action="store_true", help="wait for the published version")
    # the nightly recipe trains two whole draws (policytrain/draws.py): ~90 min cold for the declared packages alone,
    # more with a cold nightly corpus; the builder's step allows 4 hours (master/registry.py)
    rt.add_argument("--timeout", type=positive_float, default=4 * 3600, help="seconds to wait with --wait "
                    "(default 4 hours)")
    rt.set_defaults(func=_retrain)
