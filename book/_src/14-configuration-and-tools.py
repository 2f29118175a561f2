# %% [markdown]
# # 14 — Configuration and tools
#
# A Kafka setting can be set in four places, and the broker resolves it the same way every time.
# For a topic setting such as `retention.ms`, the first of these that has a value wins:
#
# 1. a **per-topic** override (`kafka-configs --entity-type topics --entity-name T --alter`),
#    stored in the cluster metadata (`DYNAMIC_TOPIC_CONFIG`);
# 2. a **per-broker dynamic** value of the matching broker setting, `log.retention.ms`
#    (`--entity-type brokers --entity-name 0`; `DYNAMIC_BROKER_CONFIG`);
# 3. the **cluster-wide dynamic default** of that broker setting (`--entity-default`;
#    `DYNAMIC_DEFAULT_BROKER_CONFIG`);
# 4. the **static** value from `server.properties` or `--override` at start-up
#    (`STATIC_BROKER_CONFIG`), and finally Kafka's **default** (`DEFAULT_CONFIG`).
#
# Dynamic values take effect without a restart; static ones need one. Some broker settings come in
# several units: `log.retention.ms` beats `log.retention.minutes`, which beats
# `log.retention.hours` (the default is 168 hours). `kafka-configs --describe` shows the value
# in force and, under `synonyms`, every layer that has one, winner first.
#
# This chapter runs a real kafkalab server and the `kafkalab` tools against it. Each tool keeps
# the flags and the output of the Kafka script it mirrors, so what you type here works against
# a Kafka cluster.

# %%
from kafkalab.book import check_version
check_version("0.1.0")

# %% [markdown]
# ## A server with a static setting
# `--override` sets a static broker property, as a line in `server.properties` would:
# retention of 24 hours for every topic.

# %%
from kafkalab.book import kafkalab_command, remove_scratch_dirs, scratch_dir
from kafkalab.client.launcher import start_server

data_dir = scratch_dir("ch14-") / "data"
server = start_server(data_dir, overrides=["log.retention.hours=24"])
BOOTSTRAP = ["--bootstrap-server", server.bootstrap]
kafkalab_command("topics", *BOOTSTRAP, "--create", "--topic", "orders", "--partitions", "3")

# %% [markdown]
# ## Precedence, one layer at a time
# `describe_retention` prints what `kafkalab configs --describe` says about the topic's
# `retention.ms`: the value in force and its synonyms.

# %%
def describe_retention() -> None:
    kafkalab_command("configs", *BOOTSTRAP, "--describe", "--entity-type", "topics",
                     "--entity-name", "orders", "--all")


import contextlib
import io


def retention_line() -> str:
    """Only the retention.ms line of the full description."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        describe_retention()
    return next(line.strip() for line in out.getvalue().splitlines() if line.strip().startswith("retention.ms="))


print(retention_line())

# %% [markdown]
# The static `log.retention.hours=24` shows up as `STATIC_BROKER_CONFIG`, ahead of Kafka's default
# of 168 hours. Now a cluster-wide dynamic default, then an override for broker 0 only:

# %%
kafkalab_command("configs", *BOOTSTRAP, "--alter", "--entity-type", "brokers", "--entity-default",
                 "--add-config", "log.retention.ms=3600000")
print(retention_line())
kafkalab_command("configs", *BOOTSTRAP, "--alter", "--entity-type", "brokers", "--entity-name", "0",
                 "--add-config", "log.retention.ms=7200000")
print(retention_line())

# %% [markdown]
# A per-broker value beats the cluster default, which beats the static file. Last, the topic's
# own override, which beats everything:

# %%
kafkalab_command("configs", *BOOTSTRAP, "--alter", "--entity-type", "topics", "--entity-name", "orders",
                 "--add-config", "retention.ms=60000")
kafkalab_command("configs", *BOOTSTRAP, "--describe", "--entity-type", "topics", "--entity-name", "orders")

# %% [markdown]
# Without `--all`, `--describe` lists only the topic's own dynamic overrides, as Kafka's tool
# does. Removing an override (`--delete-config`) lets the next layer show through again.
#
# ## Exercises
# Each prediction starts blank. Write your answer, run the check cell: it tells you if you are
# right, and gives a hint if not.
#
# **Predict, then check 1.** Delete the topic's `retention.ms` override. What `retention.ms` is
# in force for `orders` now, in milliseconds?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- milliseconds
my_prediction = 7_200_000
### END SOLUTION

# %% tags=["check"]
from kafkalab.book import check_prediction

kafkalab_command("configs", *BOOTSTRAP, "--alter", "--entity-type", "topics", "--entity-name", "orders",
                 "--delete-config", "retention.ms")
in_force = int(retention_line().split()[0].split("=")[1])
check_prediction(my_prediction, in_force, right=f"retention.ms={in_force}",
                 hint="the topic override is gone; which of the remaining layers comes first: the "
                      "per-broker value, the cluster default, or the static file?")
### BEGIN HIDDEN TESTS
assert my_prediction == 7_200_000
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 2.** Now delete broker 0's own `log.retention.ms` too. What is in force?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- milliseconds
my_prediction = 3_600_000
### END SOLUTION

# %% tags=["check"]
kafkalab_command("configs", *BOOTSTRAP, "--alter", "--entity-type", "brokers", "--entity-name", "0",
                 "--delete-config", "log.retention.ms")
in_force = int(retention_line().split()[0].split("=")[1])
check_prediction(my_prediction, in_force, right=f"retention.ms={in_force}",
                 hint="the cluster-wide default set with --entity-default is still there.")
### BEGIN HIDDEN TESTS
assert my_prediction == 3_600_000
### END HIDDEN TESTS

# %% [markdown]
# **Predict, then check 3.** A second server starts with two static settings,
# `log.retention.hours=24` and `log.retention.minutes=30`, and nothing dynamic. What
# `retention.ms` does a new topic get?

# %% tags=["answer"]
### BEGIN SOLUTION
### BLANK my_prediction = None  # <- milliseconds
my_prediction = 1_800_000
### END SOLUTION

# %% tags=["check"]
second = start_server(scratch_dir("ch14-") / "data", overrides=["log.retention.hours=24", "log.retention.minutes=30"])
try:
    kafkalab_command("topics", "--bootstrap-server", second.bootstrap, "--create", "--topic", "t", "--partitions", "1")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        kafkalab_command("configs", "--bootstrap-server", second.bootstrap, "--describe", "--entity-type", "topics",
                         "--entity-name", "t", "--all")
    line = next(x.strip() for x in out.getvalue().splitlines() if x.strip().startswith("retention.ms="))
finally:
    second.stop()
print(line)
check_prediction(my_prediction, int(line.split()[0].split("=")[1]), right=line.split()[0],
                 hint="of log.retention.ms, .minutes and .hours, the finer unit wins when several are set.")
### BEGIN HIDDEN TESTS
assert my_prediction == 1_800_000
### END HIDDEN TESTS

# %% [markdown]
# ## Every tool beside the Kafka script it mirrors
# The table comes from the `kafkalab` command's own registry, so it lists exactly what
# `kafkalab --help` does.

# %%
import pandas as pd

from kafkalab.tools.cli import SUBCOMMANDS

pd.set_option("display.max_colwidth", 120)
def kafka_script(help_text: str) -> str:
    """The ``kafka-*.sh`` a tool's help names, or "-" for kafkalab's own tools."""
    found = [word.strip("().,") for word in help_text.split() if word.strip("().,").endswith(".sh")]
    return found[0] if found else "- (kafkalab's own)"


pd.DataFrame([(f"kafkalab {name}", kafka_script(text), text.split(" (")[0])
              for name, (_module, text) in SUBCOMMANDS.items()],
             columns=["kafkalab", "Kafka's script", "what it does"])

# %% [markdown]
# A few of them against the running server. Each prints what the Kafka script prints.

# %%
kafkalab_command("topics", *BOOTSTRAP, "--describe", "--topic", "orders")
kafkalab_command("configs", *BOOTSTRAP, "--describe", "--entity-type", "brokers", "--entity-default")
kafkalab_command("consumer-groups", *BOOTSTRAP, "--list")
kafkalab_command("transactions", *BOOTSTRAP, "list")

# %% [markdown]
# Tools that read files rather than a server work on the data directory directly, like
# `kafka-dump-log.sh` on a segment:

# %%
segment = sorted((data_dir / "orders-0").glob("*.log"))[0]
kafkalab_command("dump-log", "--files", str(segment))

# %% [markdown]
# The partition is empty, so the dump lists only where the segment starts. Chapter 02 dumps
# segments full of batches; chapter 05 uses `delete-records`; chapter 10 `consumer-groups`.

# %% [markdown]
# **Change the engine.** Kafka ranks a cluster-wide dynamic default
# (`kafka-configs --entity-default`) above `server.properties`. Swap the two in
# `ConfigLayers.broker_layers` (`kafkalab/config/resolve.py`): move the `STATIC_BROKER_CONFIG`
# line above the `DYNAMIC_DEFAULT_BROKER_CONFIG` one, and restart the kernel. The check below fails
# before the edit and passes after it. On a running cluster whose brokers all set
# `log.retention.ms` in `server.properties`, what could an operator still change without a
# rolling restart? Undo the edit afterwards.

# %% tags=["raises-exception"]
from kafkalab.classroom.engine_changes import check as engine_change_check

engine_change_check("static-over-dynamic-default")  # raises EngineUnchanged until the engine is edited

# %%
server.stop()
remove_scratch_dirs()
