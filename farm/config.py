"""Farm configuration: embedded defaults, then a TOML file, then environment variables.

The file is `$MLGO_FARM_CONFIG` (default `<home>/mlgo-farm.toml` if present, where the home is
`$MLGO_FARM_HOME`, else the checkout the farm runs from: `farm_home`). A relative `var_dir` (or
`file:` store URL) is read against the directory of the file that set it, else against the home,
never against the current directory: the CLI works the same from anywhere. Every key can be
overridden by `MLGO_FARM_<SECTION>_<KEY>` (for example `MLGO_FARM_STORE_URL`). Secrets
(S3 keys, SMTP password) come from the environment or that file, never from the repository;
boto3 also reads its own standard variables (`AWS_ACCESS_KEY_ID`, ...).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from farm import datafile
from farm.envvalues import check_range, coerce, env_key
from farm.errors import FarmError, InputError


@dataclass(frozen=True)
class LLVMConfig:
    #: Directory of the LLVM tools every step runs (clang, opt, llc, llvm-ir2vec, ...; farm/toolchain.py).
    bin_dir: str = "/usr/lib/llvm-22/bin"
    #: The oldest LLVM major version the farm accepts there; an older tool is an error (exit 3).
    min_major: int = 22
    #: The llvm-project git repository the nightly LLVM builders follow (upstream:
    #: https://github.com/llvm/llvm-project.git, or a local mirror): the master polls it (Buildbot's
    #: GitPoller), so their builds carry the commit they were scheduled at and Buildbot's console and grid
    #: views list them by commit. Empty (the default): nothing is polled, so a farm on a machine without that
    #: network (the single-machine stack, a test) never reaches out; nightly builds then carry no revision.
    repo: str = ""
    #: Its branch the master follows.
    branch: str = "main"
    #: Seconds between two polls of `repo`; 0: no poller (nightly builds then carry no revision).
    poll_interval: int = 600

    def __post_init__(self) -> None:
        if self.poll_interval < 0:
            raise FarmError(f"[llvm] poll_interval must not be negative, got {self.poll_interval!r}")
        if self.polls and not self.branch.strip():
            raise FarmError("[llvm] branch must be set while repo is (and poll_interval is not 0)")

    @property
    def polls(self) -> bool:
        """Whether the master polls `repo`: only when one is named, and poll_interval is not 0."""
        return bool(self.repo.strip() and self.poll_interval)


@dataclass(frozen=True)
class PathsConfig:
    #: Working area for corpora, datasets, runs, the embedded store and the history database. Relative: to the
    #: directory of the configuration file that sets it, else to the farm's home (`$MLGO_FARM_HOME`, default the
    #: checkout), never to the current directory.
    var_dir: str = "var"


@dataclass(frozen=True)
class StoreConfig:
    #: `file:///abs/dir` (embedded default, under var_dir when empty) or `s3://bucket/prefix`.
    url: str = ""
    #: S3 endpoint for MinIO or another S3 service; empty: AWS's.
    endpoint_url: str = ""
    #: The bucket's region.
    region: str = "us-east-1"
    #: S3 credentials; empty: boto3's own (`AWS_ACCESS_KEY_ID`, ...).
    access_key_id: str = ""
    #: Its secret (set it in the environment, not in a file in the repository).
    secret_access_key: str = ""


@dataclass(frozen=True)
class CeleryConfig:
    #: Celery's broker (Redis); a loopback URL without a password gets the farm's (`redis_password`).
    broker_url: str = "redis://127.0.0.1:6379/0"
    #: Where Celery keeps task results and states (Redis), with the same password rule.
    result_backend: str = "redis://127.0.0.1:6379/1"
    #: crontab fields "minute hour day_of_month month_of_year day_of_week" for retraining.
    retrain_schedule: str = "0 3 * * 0"
    #: Seconds a delivered task may go without its worker renewing its lease before Redis
    #: redelivers it (farm/lease.py; workers renew every quarter of this).
    visibility_timeout: int = 60
    #: Seconds after which staged files whose chain has no message left in the broker are removed
    #: (beat's hourly vocabgen.tasks.clean_staging).
    staging_max_age: int = 86400
    #: Password of a loopback Redis the URLs above name without one; empty: generated once by
    #: `stack up` into <var_dir>/secrets/redis-password (mode 0600) and read from there.
    redis_password: str = ""
    #: Port of Flower, the Celery monitor `stack up` starts on 127.0.0.1 (linked from the web UI); 0: no Flower.
    flower_port: int = 5555
    #: Seconds `vocab retrain --wait` keeps reconnecting (with backoff) to a Redis it lost (a restart) before it fails.
    client_reconnect: int = 120


@dataclass(frozen=True)
class SMTPConfig:
    #: The mail server that sends the regression alerts and Buildbot's notices. Loopback (the default): the mail sink
    #: `stack up` starts on `port`, which sends nothing on and keeps each mail in <var_dir>/mail/ (the dashboard's
    #: Mail page); a real server replaces it.
    host: str = "127.0.0.1"
    #: Its port.
    port: int = 8025
    #: Upgrade the connection with STARTTLS (ignored with `ssl`).
    starttls: bool = False
    #: Connect with TLS from the start (SMTPS).
    ssl: bool = False
    #: Login at the mail server; empty: none.
    user: str = ""
    #: Its password.
    password: str = ""
    #: The From address of every mail.
    sender: str = "mlgo-farm@localhost"
    #: Who gets the alerts and Buildbot's failure mails, comma-separated; empty: nobody is mailed.
    recipients: str = ""
    #: Attempts per queued alert of one `regress alerts --flush` (the Celery beat's delivery makes one a minute).
    retries: int = 3

    @property
    def recipient_list(self) -> list[str]:
        """The addresses of `recipients` (empty: nobody is mailed, neither alerts nor Buildbot's notices)."""
        return [r.strip() for r in self.recipients.split(",") if r.strip()]


@dataclass(frozen=True)
class AlertsConfig:
    """Regression alerts as records with a life (regression/alerts/records.py)."""

    #: Days an alert may stay untriaged before the dashboard flags it overdue (Perfherder's triage due date).
    triage_days: float = 2.0
    #: Minutes a new regression alert's mail waits in the outbox for other builders' alerts with the same changed
    #: input (LLVM, policy, vocabulary), which then join it in one summary mail of the group; 0: mailed at once.
    #: Held mails go out with the first delivery after the wait (the Celery beat's delivery every minute, or
    #: `regress alerts --flush`).
    group_wait: float = 0.0


@dataclass(frozen=True)
class RegressionConfig:
    """Where the regression history lives: runs, measurements, verdicts, alerts (regression/history.py)."""

    #: The history database. Empty: the embedded SQLite file <var_dir>/regression/history.sqlite. A path: that
    #: SQLite file. `postgresql://USER@HOST:PORT/DB`: a PostgreSQL database the regression builders of several
    #: machines share (psycopg 3); its tables are created or upgraded on first open. Keep a password out of files:
    #: `history_password`, or the whole URL in MLGO_FARM_REGRESSION_HISTORY_URL.
    history_url: str = ""
    #: Password of `history_url`'s user when the URL names none; empty: the URL's own, else libpq's (~/.pgpass).
    history_password: str = ""
    #: Seconds a dashboard page waits for the history database: to connect, and for each statement (PostgreSQL
    #: cancels it; the page's transaction is cut at twice this). Past it the page says the history is unavailable
    #: (the overview shows everything else; a page that is only the history answers 503 in one line).
    page_timeout: float = 3.0


#: Where the master mounts the farm's dashboard (master/dashboard: Buildbot's `wsgi_dashboards` plugin, named
#: `farm`); it serves the published store read-only under `store/` (`store/regression/BUILDER/RUN/index.html`).
DASHBOARD_PATH = "plugins/wsgi_dashboards/farm/"


@dataclass(frozen=True)
class BuildbotConfig:
    #: Interface the master listens on (PB for workers, HTTP for the web/REST API).
    bind: str = "127.0.0.1"
    #: Host name workers and clients use to reach the master.
    master_host: str = "127.0.0.1"
    #: Port of Buildbot's PB protocol, which workers connect to.
    pb_port: int = 9989
    #: Port of the web UI, REST API and the farm's dashboard.
    www_port: int = 8010
    #: Master directory (default: <var_dir>/buildbot/master); the SQLite database lives in it.
    master_dir: str = ""
    #: Workers the master accepts: "name:tag+tag:max_builds,..." (tags and max_builds optional).
    workers: str = "local:big+x86_64:1"
    #: Shared worker password; empty: generated once into <var_dir>/buildbot/worker-password.
    worker_password: str = ""
    #: This host's worker: its name and directory (default: <var_dir>/buildbot/worker-<name>).
    worker_name: str = "local"
    #: Its directory (default: <var_dir>/buildbot/worker-<name>).
    worker_dir: str = ""
    #: Web UI / REST login allowed to force, stop, cancel and rebuild (anonymous users only look).
    admin_user: str = "admin"
    #: Its password; empty: generated once into <var_dir>/secrets/www-admin-password (mode 0600).
    admin_password: str = ""
    #: Web login `mlgo-farm master force` uses (empty: admin_user; `--user` overrides it).
    client_user: str = ""
    #: Its password (empty: the admin's, configured or read from the generated file on this host).
    client_password: str = ""
    #: The master's web address as readers reach it (a TLS proxy's `https://farm.example.org/`): Buildbot's
    #: own links, the steps' links and the report and build links in alert mails. Empty:
    #: http://master_host:www_port/.
    web_url: str = ""
    #: Seconds a build may go without starting its first step (not counting a wait for a lock) before the
    #: master's watchdog retries it, or fails it after two such retries (master/watchdog.py).
    start_deadline: int = 300
    #: Seconds `master force --wait` keeps reconnecting (with backoff) to a master it lost (a restart) before it fails.
    client_reconnect: int = 180

    def __post_init__(self) -> None:
        if self.web_url and not re.fullmatch(r"https?://[A-Za-z0-9.\[\]:-]+(/[^\s?#]*)?", self.web_url):
            raise FarmError(f"[buildbot] web_url {self.web_url!r}: expected http(s)://HOST[:PORT]/[PATH], "
                            f"without query or fragment")

    @property
    def url(self) -> str:
        """The master's web address, ending in '/'."""
        url = self.web_url or f"http://{self.master_host}:{self.www_port}/"
        return url if url.endswith("/") else url + "/"

    def dashboard(self, path: str = "") -> str:
        """The URL of `path` on the farm's dashboard (`store/regression/B/R/index.html`, `regression/B/`)."""
        return self.url + DASHBOARD_PATH + path


@dataclass(frozen=True)
class PolicyConfig:
    #: Seconds a compiler may stay silent without using CPU before its policy host kills it.
    timeout: float = 60.0
    #: Policy used by `policy-cc` when --policy is not given: a built-in name or an .onnx path.
    default: str = "heuristic"
    #: Unix socket of a running `mlgo-farm policy serve`; when set, `policy-cc` asks it instead.
    server: str = ""
    #: Seconds a shared policy server (started by the launcher for an .onnx policy) lingers unused.
    shared_idle_exit: int = 60
    #: Train the inliner policy after every IR vocabulary publish that becomes (or waits to become) `latest`;
    #: false on a farm that publishes vocabularies only (then nothing settles a vocabulary's policy check:
    #: turn `[gate] policy_size` off too).
    retrain_after_vocab: bool = True
    #: The inliner training recipe of `policy retrain` (a name in policytrain/recipes.py RECIPES): `cxx`, C++ per file,
    #: where the search finds most (5.3 % of the linked C++ libraries against 0.35 % on per-file C:
    #: bench/README.md#bench_headroom), so the policy the farm publishes is the C++ one; `nightly` is C's recipe (it
    #: ties the heuristic on C, 1.0000x linked). `policy train`'s default is the same recipe.
    recipe: str = "cxx"
    #: Packages the retrained policy trains and validates on (comma separated Debian source packages, or
    #: NAME=CORPUS_DIR); empty: the splits declared in policytrain/splitdata.py.
    train: str = ""
    #: The packages it validates on (the same form; empty: the declared split).
    validation: str = ""
    #: The packages of the held-out table every trained policy reports (empty: the declared split).
    evaluation: str = ""
    #: Parallel compiles of a retraining in its worker (threads); a farm with more workers trains with
    #: `mlgo-farm policy train --celery` instead, one Celery task per module.
    train_jobs: int = 2
    #: Seconds a `policy retrain` task may train before Celery stops it (a soft time limit: the training's compiles
    #: stop, a vocabulary waiting for the policy is told why, and the task fails in one line); its process is killed
    #: if it has not stopped 5 minutes later. 0: no limit. One draw of the nightly took 72 min on a 2-core worker
    #: (96 min with single flips); the builder that waits for it gives up after 4 hours, so by default the task
    #: fails first and says why.
    retrain_time_limit: int = 3 * 3600


@dataclass(frozen=True)
class VocabConfig:
    #: Key that signs a trained vocabulary's metrics and lineage to its bytes (HMAC); empty:
    #: generated once into <var_dir>/secrets/vocab-signing-key. Set the same key on every host
    #: that trains or publishes.
    signing_key: str = ""
    #: The vocabulary training recipe (vocabgen/params.py RECIPES) the Celery retrain and `vocab train` start
    #: from; explicit parameters (`--epochs`, ...) override it field by field. `nightly`: 1,000 epochs (100 from a
    #: warm start); `demo`: a tenth of them (`make demo`).
    #: An unknown name is one line where a training starts (vocabgen/params.py `configured`): the farm's settings
    #: import no role.
    recipe: str = "nightly"


@dataclass(frozen=True)
class GateConfig:
    """The promotion gate a newly published vocabulary must pass to become `latest` (vocabgen/gate.py).

    The `min_*` keys are the least fraction (0 to 1) of a section's entities the triplets must
    train (the rest is filler). The defaults keep out a degenerate dataset and let a small C
    corpus through (zlib: IR Opcodes 35/68, Types 5/12, Arguments 14/30; MIR Opcodes 76/6,868,
    CommonOperands 8/20, PhysicalRegisters 29/135, VirtualRegisters 1/135, as post-allocation MIR
    has almost none; the tests' four C files: IR Opcodes 32/68, Types 4/12, and plain C never
    uses half of the twelve types): raise them as the corpus grows. The
    tolerances are how much lower than the current `latest`'s a held-out MRR, Hits@10 or
    all-questions analogy score may be (absolute; IR has 31 analogy questions, so 0.05 lets one more
    answer be wrong but not two; MIR has 8, so not one).

    `policy_size`: a retrained inliner policy becomes `latest` only once it beats LLVM's heuristic
    on `policy_benchmarks` (names from regression/benchmarks.py, or absolute paths of local C
    benchmark directories, comma separated; those the policy trained or validated on are left
    out): the geomean of binary `.text` ratios below `1 - policy_margin` percent, no benchmark
    above `1 + policy_size_tolerance` percent, and not worse than the policy in force
    (regression/policygate.py). An IR vocabulary waits for the policy retrained with it only to
    check that it is not worse than the one retrained with the vocabulary in force (held-out
    geomean at most `policy_size_tolerance` percent above; vocabgen/gate.py).
    """

    #: Least fraction of IR `Opcodes` the triplets must train.
    min_ir_opcodes: float = 0.4
    #: Least fraction of IR `Types`.
    min_ir_types: float = 0.25
    #: Least fraction of IR `Arguments`.
    min_ir_arguments: float = 0.3
    #: Least fraction of MIR `Opcodes`.
    min_mir_opcodes: float = 0.005
    #: Least fraction of MIR `CommonOperands`.
    min_mir_common_operands: float = 0.3
    #: Least fraction of MIR `PhysicalRegisters`.
    min_mir_physical_registers: float = 0.1
    #: Least fraction of MIR `VirtualRegisters`.
    min_mir_virtual_registers: float = 0.0
    #: How much lower than `latest`'s the held-out MRR may be.
    mrr_tolerance: float = 0.05
    #: How much lower than `latest`'s the held-out Hits@10 may be.
    hits_at_10_tolerance: float = 0.05
    #: How much lower than `latest`'s the all-questions analogy score may be.
    analogy_tolerance: float = 0.05
    #: Whether a retrained inliner policy waits for its size check, and an IR vocabulary for its policy.
    policy_size: bool = True
    #: Percent by which the geomean of `.text` against the heuristic must be below 1.
    policy_margin: float = 0.5
    #: Percent by which no benchmark's `.text` may exceed the heuristic's (a new IR vocabulary's policy the old one's).
    policy_size_tolerance: float = 0.5
    #: The size check's benchmarks: names (regression/benchmarks.py) or absolute directories, comma separated. Two C++
    #: programs in no split, as the policy the nightly publishes is C++'s (`[policy] recipe`); zlib,bzip2 for C's.
    policy_benchmarks: str = "gperf,minisat"

    @property
    def policy_bar(self) -> float:
        """The `.text` geomean a policy must stay below (`1 - policy_margin` percent): the size check's."""
        return 1 - self.policy_margin / 100

    @property
    def policy_cap(self) -> float:
        """The `.text` ratio no benchmark may exceed (`1 + policy_size_tolerance` percent): the size check's, and
        the one policy training prefers its validation checkpoints within (policytrain/trainer.py)."""
        return 1 + self.policy_size_tolerance / 100

    def __post_init__(self) -> None:
        # names or absolute directories only: "../../etc" would otherwise load and fail (or build
        # whatever it points at) only when a retrained policy reaches the gate
        for item in (x.strip() for x in self.policy_benchmarks.split(",")):
            if not item:
                continue
            if item.startswith("/"):
                if any(part in (".", "..") for part in item.split("/")):
                    raise FarmError(f"[gate] policy_benchmarks: {item!r} must be an absolute directory without "
                                    "'.' or '..' components")
            elif not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", item):
                raise FarmError(f"[gate] policy_benchmarks: {item!r} is neither a benchmark name "
                                "(regression/benchmarks.py) nor an absolute directory")


@dataclass(frozen=True)
class CacheConfig:
    #: Directory of the caches every build on this worker shares (ccache for translation units,
    #: the farm's own for module triplets); default <var_dir>/cache. Safe for concurrent builds.
    dir: str = ""
    #: false: every TU is compiled and every module run again (`--no-cache` sets it for one command).
    enabled: bool = True
    #: Bound of the translation-unit (ccache) cache, MiB.
    compile_max_mb: int = 10240
    #: Bound of the triplet cache, MiB; the least recently used entries are evicted beyond it.
    triplets_max_mb: int = 2048

    def __post_init__(self) -> None:
        for name in ("compile_max_mb", "triplets_max_mb"):
            if getattr(self, name) <= 0:  # a zero bound would silently mean "cache nothing"
                raise FarmError(f"[cache] {name} must be greater than 0, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class Settings:
    llvm: LLVMConfig = field(default_factory=LLVMConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    celery: CeleryConfig = field(default_factory=CeleryConfig)
    smtp: SMTPConfig = field(default_factory=SMTPConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    regression: RegressionConfig = field(default_factory=RegressionConfig)
    buildbot: BuildbotConfig = field(default_factory=BuildbotConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    vocab: VocabConfig = field(default_factory=VocabConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)

    @property
    def var_dir(self) -> Path:
        return Path(self.paths.var_dir).absolute()

    @property
    def store_url(self) -> str:
        return self.store.url or (self.var_dir / "store").as_uri()


def _check_type(value: Any, like: Any, where: str) -> Any:
    """A value from the TOML file, checked against the type of the setting's default."""
    ok = (isinstance(value, bool) if isinstance(like, bool)
          else isinstance(value, int) and not isinstance(value, bool) if isinstance(like, int)
          else isinstance(value, int | float) and not isinstance(value, bool) if isinstance(like, float)
          else isinstance(value, type(like)))
    if not ok:
        raise InputError(f"{where}: expected {type(like).__name__}, got {value!r}")
    return float(value) if isinstance(like, float) else value  # no OverflowError: datafile bounds integers


#: `MLGO_FARM_*` variables that are not settings: the config file's path, the set-up script's
#: virtualenv, and the demo's knobs. Any other `MLGO_FARM_*` name must be a setting, so that a
#: mistyped `MLGO_FARM_SMTP_RECIPIENT` is an error instead of a night without mail.
NON_SETTING_VARIABLES = frozenset({"MLGO_FARM_CONFIG", "MLGO_FARM_HOME", "MLGO_FARM_VENV",
                                   "MLGO_FARM_DEMO_PACKAGE", "MLGO_FARM_DEMO_TIMEOUT",
                                   "MLGO_FARM_DEMO_MARCH"})
#: The configuration file's name in the farm's home.
CONFIG_NAME = "mlgo-farm.toml"


def farm_home(env: dict[str, str] | None = None) -> Path:
    """Where `mlgo-farm.toml` and a relative `var_dir` live: `$MLGO_FARM_HOME`, else the checkout this code runs
    from (the directory holding `farm/` and pyproject.toml: `deploy/setup.sh` installs it editable), else the
    current directory (a copy installed elsewhere without MLGO_FARM_HOME). Absolute."""
    env = os.environ if env is None else env
    if env.get("MLGO_FARM_HOME"):
        return Path(env["MLGO_FARM_HOME"]).expanduser().absolute()
    checkout = Path(__file__).resolve().parent.parent
    return checkout if (checkout / "pyproject.toml").is_file() else Path.cwd()


def config_path(env: dict[str, str] | None = None) -> Path:
    """The configuration file that is read: `$MLGO_FARM_CONFIG`, else `<home>/mlgo-farm.toml` (which may not
    exist: then the defaults and the environment alone); absolute."""
    env = os.environ if env is None else env
    return Path(env.get("MLGO_FARM_CONFIG") or farm_home(env) / CONFIG_NAME).expanduser().absolute()


def _anchored(value: str, base: Path) -> str:
    """A path setting made absolute against `base` (an absolute one as it is)."""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def _anchored_url(url: str, base: Path) -> str:
    """A `file:` store URL whose path is relative (`file:store`) made absolute against `base`; others as they are."""
    if not url.startswith("file:") or url.startswith("file:/"):
        return url
    return (base / unquote(url[len("file:"):])).as_uri()


def _read_file(p: Path) -> dict[str, Any]:
    """The file's tables, through the farm's one TOML reader (farm/datafile.py: hostile text and integers beyond
    TOML's 64 bits are one line there). What is wrong in the file is bad input (InputError, exit 2); a bad
    environment variable stays a FarmError (exit 1), as the per-compile launcher reports it too."""
    data = datafile.read(p, "config")
    for name, value in data.items():
        if not isinstance(value, dict):
            raise InputError(f"config {p}: {name!r} must be a table ([{name}] with keys), got {value!r}")
    return data


def load_settings(path: str | Path | None = None, env: dict[str, str] | None = None) -> Settings:
    """Read the configuration file (if any) and apply environment overrides."""
    env = dict(os.environ if env is None else env)
    path = path or config_path(env)
    data: dict[str, dict[str, Any]] = {}
    p = Path(path)
    home = farm_home(env)
    anchors: dict[tuple[str, str], Path] = {}  # (section, key) -> the directory a relative value is read against
    if p.is_file():
        data = _read_file(p)
    elif p.exists():
        raise InputError(f"config {p} is not a file")
    elif "MLGO_FARM_CONFIG" in env and env["MLGO_FARM_CONFIG"] == str(path):
        raise InputError(f"config file {p} does not exist")
    sections = {}
    known_vars = set(NON_SETTING_VARIABLES)
    for f in dataclasses.fields(Settings):
        cls = f.default_factory  # type: ignore[misc]
        base = cls()
        values = {}
        for sub in dataclasses.fields(base):
            default = getattr(base, sub.name)
            value = default
            if sub.name in data.get(f.name, {}):
                where = f"config {p}: [{f.name}] {sub.name}"
                value = check_range(f.name, sub.name, _check_type(data[f.name][sub.name], default, where), where,
                                    InputError)
                anchors[f.name, sub.name] = p.absolute().parent
            key = env_key(f.name, sub.name)
            known_vars.add(key)
            if key in env:
                value = check_range(f.name, sub.name, coerce(env[key], default, key), key)
                anchors.pop((f.name, sub.name), None)
            if (f.name, sub.name) == ("paths", "var_dir"):
                value = _anchored(value, anchors.get((f.name, sub.name), home))
            elif (f.name, sub.name) == ("store", "url"):
                value = _anchored_url(value, anchors.get((f.name, sub.name), home))
            values[sub.name] = value
        unknown = set(data.get(f.name, {})) - {s.name for s in dataclasses.fields(base)}
        if unknown:
            raise InputError(f"config {p}: unknown key(s) in [{f.name}]: {', '.join(sorted(unknown))}")
        sections[f.name] = cls(**values)
    unknown_sections = set(data) - set(sections)
    if unknown_sections:
        raise InputError(f"config {p}: unknown section(s): {', '.join(sorted(unknown_sections))}")
    stray = sorted(k for k in env if k.startswith("MLGO_FARM_") and k not in known_vars)
    if stray:
        raise FarmError(f"environment variable {stray[0]} names no setting (settings are MLGO_FARM_<SECTION>_<KEY>, "
                        f"e.g. MLGO_FARM_SMTP_RECIPIENTS)")
    return Settings(**sections)
