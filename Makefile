# The two commands a user needs: `make demo` and `make test`. Both create .venv on first use
# and re-install only when pyproject.toml changes (stamp files), so they are idempotent.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit clean help zookeeper chromium proto upstream-keys docs

help:
	@echo "make demo   install trimtab into .venv, show a sample topology, run the fleet job on a generated fleet"
	@echo "make test   install trimtab with dev extras into .venv, then ruff, mypy and pytest"
	@echo "make check  ruff, mypy and the fast tests (no Spark, ZooKeeper, server, browser, process)"
	@echo "make docs   build the docs site into site/ (.venv/bin/mkdocs serve to read it)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(VENV)/.installed

DEMO := demo-out
demo: $(VENV)/.installed
	$(BIN)/trimtab topology --inventory src/trimtab/data/sample_inventory.csv
	$(BIN)/trimtab generate-fleet --out $(DEMO)/fleet --bad-rows 0.01
	$(BIN)/trimtab pipeline run --input $(DEMO)/fleet --output $(DEMO)/results --master 'local[2]' \
	    --conf spark.ui.enabled=false
	@echo "demo: inputs in $(DEMO)/fleet; results (node_load, bookie_weights, transfers, allocations, exports, run.json) in $(DEMO)/results; open $(DEMO)/results/report.html in a browser"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The docs site (docs/, mkdocs.yml) into site/; `.venv/bin/mkdocs serve` serves it while you edit.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# The online tests start a real ZooKeeper server from Debian's package (tests/online/conftest.py).
# Installed only when missing: `apt-get update` then `apt-get install zookeeper`, as root or sudo.
ZK_JAR := /usr/share/java/zookeeper.jar
zookeeper:
	@if [ ! -f $(ZK_JAR) ]; then \
	    echo "make: installing Debian's zookeeper package for the online tests"; \
	    sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	    $$sudo apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq zookeeper >/dev/null; \
	fi

# The report test opens report.html in Debian's headless Chromium (tests/pipeline/test_report.py),
# driven by playwright with no browser download. Installed only when missing, like zookeeper.
CHROMIUM := /usr/bin/chromium
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	    echo "make: installing Debian's chromium package for the report's browser test"; \
	    sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	    $$sudo apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; \
	fi

# pytest-xdist: two workers, each test module on one of them (its module fixtures built once; at
# most one Spark session and one ZooKeeper server per worker). PYTEST_WORKERS=0: no workers.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadfile

unit: $(VENV)/.installed-dev zookeeper chromium
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) --durations=15

# The fast path: ruff, mypy and the tests with none of the markers of tests/markers.py (no Spark,
# ZooKeeper, server, browser or trimtab process, nothing slow): `pytest --fast`.
.PHONY: check
check: $(VENV)/.installed-dev lint typecheck
	$(BIN)/python -m pytest --fast $(PYTEST_PARALLEL)

# Regenerate the committed protobuf code after editing a .proto (grpcio-tools): GetBookieInfo
# over gRPC, BookKeeper's v3 frame, and the BookieServiceInfoFormat a bookie registers.
BOOKIEINFO_PROTO_DIR := src/trimtab/systems/bookkeeper/bookieinfo/proto
REGISTRY_PROTO_DIR := src/trimtab/systems/bookkeeper/registry/proto
proto: $(VENV)/.installed-dev
	$(BIN)/python -m grpc_tools.protoc -I src --python_out=src --pyi_out=src \
	    --grpc_python_out=src $(BOOKIEINFO_PROTO_DIR)/bookieinfo.proto
	printf '\n__all__ = ["DESCRIPTOR", "GetBookieInfoRequest", "GetBookieInfoResponse", "StatusCode"]\n' \
	    >> $(BOOKIEINFO_PROTO_DIR)/bookieinfo_pb2.py
	printf '\n__all__ = ["BookieInfo", "BookieInfoServicer", "BookieInfoStub", "add_BookieInfoServicer_to_server"]\n' \
	    >> $(BOOKIEINFO_PROTO_DIR)/bookieinfo_pb2_grpc.py
	$(BIN)/python -m grpc_tools.protoc -I src --python_out=src --pyi_out=src \
	    $(BOOKIEINFO_PROTO_DIR)/bookkeeper_v3.proto $(REGISTRY_PROTO_DIR)/bookie_service_info.proto
	printf '\n__all__ = ["DESCRIPTOR", "AuthMessage", "BKPacketHeader", "OperationType", "ProtocolVersion", "Request", "Response", "StartTLSRequest", "StartTLSResponse"]\n' \
	    >> $(BOOKIEINFO_PROTO_DIR)/bookkeeper_v3_pb2.py
	printf '\n__all__ = ["DESCRIPTOR", "BookieServiceInfoFormat"]\n' \
	    >> $(REGISTRY_PROTO_DIR)/bookie_service_info_pb2.py

# Regenerate src/trimtab/data/upstream_*.keys (the keys upstream defines) from the copies of
# upstream's default files in tests/data/upstream_conf; refresh a copy with
# `python tools/upstream_keys.py fixture NEW.conf` under a header line naming file and commit.
# The BookKeeper client list comes from ClientConfiguration.java (tools/upstream_keys.py java).
UPSTREAM_CONF := tests/data/upstream_conf
# apache/pulsar (2 GB) is too large to mirror here. PULSAR_GIT is a git dir holding apache's
# master, its release branches and its release tags (a full clone of apache/pulsar does). The
# lists were built from one that took master and every branch-X.Y (plus branch-4.0-preview and
# branch-5.0-M1) from github:ascentstream/pulsar, which mirrors them (its own branch-as-* and
# vendor tags not taken), and the release tags v1.14 to v3.1.2 from github:coderzc/pulsar (a
# committer's fork); releases with no tag are read at their "Release X.Y.Z" commit. master's
# 2.12, 3.4 and 4.3 snapshots were renamed 3.0, 4.0 and 5.0 before any release.
PULSAR_REVS = master $$(git --git-dir="$(PULSAR_GIT)" for-each-ref --format='%(refname:short)' \
	refs/heads | grep -E '^branch-[0-9]+\.[0-9]+$$' | sort -V) branch-4.0-preview branch-5.0-M1
PULSAR_RENAMED := --renamed 2.12=3.0 --renamed 3.4=4.0 --renamed 4.3=5.0
PULSAR_HISTORY = every commit that changed it on master and on each release branch \
(branch-1.15 to branch-4.2, branch-4.0-preview, branch-5.0-M1), each release (its tag, else its \
release commit), each branch's tip and cut; master and branches as github:ascentstream/pulsar \
mirrors them, tags as github:coderzc/pulsar holds them (refs below); the union
# bk_server.conf's list is every release's keys: BOOKKEEPER_GIT=path/to/bookkeeper(.git) rebuilds it.
upstream-keys: | $(BIN)/python
	@if [ -n "$(BOOKKEEPER_GIT)" ]; then \
	    $(BIN)/python tools/upstream_keys.py releases "$(BOOKKEEPER_GIT)" conf/bk_server.conf \
	        bookkeeper-server/conf/bk_server.conf > src/trimtab/data/upstream_bk_server.keys; \
	else echo "upstream_bk_server.keys kept (give BOOKKEEPER_GIT= to rebuild it from every release)"; fi
	@if [ -n "$(PULSAR_GIT)" ]; then \
	    for conf in broker bookkeeper; do \
	        $(BIN)/python tools/upstream_keys.py history "$(PULSAR_GIT)" conf/$$conf.conf \
	            $$(for rev in $(PULSAR_REVS); do echo --rev $$rev; done) $(PULSAR_RENAMED) \
	            --origin "apache/pulsar conf/$$conf.conf: $(PULSAR_HISTORY)" \
	            > src/trimtab/data/upstream_pulsar_$$conf.keys || exit 1; \
	    done; \
	else echo "upstream_pulsar_*.keys kept (give PULSAR_GIT= a git dir of apache/pulsar's history)"; fi

test: lint typecheck unit

clean:
	rm -rf $(VENV) $(DEMO) site .pytest_cache .mypy_cache .ruff_cache .hypothesis build src/*.egg-info
