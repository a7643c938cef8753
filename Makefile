# Every target creates or refreshes the virtualenv it needs, so a fresh clone needs only `make`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: run test lint unit stress bytecode chromium screenshots bench clean apache conformance conformance-matrix

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Stamps: reinstall when pyproject.toml or a compiled module's source (setup.py) changes.
COMPILED_SOURCES := $(wildcard rmq/*/*.pyx)
$(VENV)/.core-installed: pyproject.toml $(COMPILED_SOURCES) | $(BIN)/python
	$(PIP) install $(PIP_FLAGS) -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml $(COMPILED_SOURCES) | $(BIN)/python
	$(PIP) install $(PIP_FLAGS) -e '.[test]'
	touch $@ $(VENV)/.core-installed

# Man pages: a wheel installs man/*.1 into <env>/share/man/man1 (pyproject's data-files), where
# `man rmq` finds them through the env's bin on PATH.  An editable install installs no data
# files, so the pages are copied there, again whenever they change.
MAN_STAMP := $(VENV)/share/man/man1/.rmq-pages
$(MAN_STAMP): $(wildcard man/*.1) | $(BIN)/python
	mkdir -p $(@D)
	rm -f $(@D)/rmq.1 $(@D)/rmq-*.1
	cp man/*.1 $(@D)/
	touch $@

run: $(VENV)/.core-installed $(MAN_STAMP)
	$(BIN)/rmq standalone

lint: $(VENV)/.test-installed
	$(BIN)/ruff check rmq tests bench examples
	$(BIN)/ruff format --check rmq tests bench examples
	$(BIN)/mypy
	$(BIN)/mypy examples/shop
	$(BIN)/lint-imports

# Test modules run in parallel (pytest-xdist), each module's tests together on one worker: every
# module starts its own processes on free ports under its own directories, and most of a test's
# time is spent waiting on them, so more workers than cores pay.  TEST_WORKERS=0 runs in-process.
# The conformance suite runs on two workers: its brokers get waitTimeMillsInSendQueue=5000
# (tests/conformance/clusters.py), as with Apache's 200 ms a send queued on a busy machine was
# answered SYSTEM_BUSY ([TIMEOUT_CLEAN_QUEUE]).  N=0 runs a suite in one process.
TEST_WORKERS ?= 4
CONFORMANCE_WORKERS ?= 2
STRESS_WORKERS ?= 0
PARALLEL = $(if $(filter 0,$(1)),,-n $(1) --dist loadfile)

# The suites start Python processes by the thousand (every broker, name server and CLI call of
# a test).  Where PYTHONDONTWRITEBYTECODE is set, as some CI environments set it, each of them
# would compile rmq's sources again (a quarter of a CLI-heavy module's CPU time): the suites
# write the bytecode first, and the processes they start keep what changes after.
unexport PYTHONDONTWRITEBYTECODE
BYTECODE = $(BIN)/python -m compileall -q -j 0 rmq tests >/dev/null

bytecode: $(VENV)/.test-installed
	$(BYTECODE)

# The console's browser tests (tests/browser) drive Debian's Chromium and its driver: installed
# here where missing (as root, as CI runs; otherwise those tests skip).
chromium:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				chromium chromium-driver; \
		else \
			echo "chromium: not installed and not root: the browser tests will skip"; \
		fi; \
	fi

unit: $(VENV)/.test-installed $(MAN_STAMP) chromium
	$(BYTECODE)
	$(BIN)/python -m pytest -q -m "not stress" --ignore=tests/conformance $(call PARALLEL,$(TEST_WORKERS)) --durations=30

test: lint unit

# docs/console/*.png: the console's main pages against a standalone with a little traffic
# (tests/browser/screenshots.py), for docs/console.md.
screenshots: $(VENV)/.test-installed chromium
	$(BIN)/python -m tests.browser.screenshots docs/console

stress: apache $(VENV)/.test-installed
	$(BYTECODE)
	RMQ_STRESS=1 $(BIN)/python -m pytest -q -m stress --ignore=tests/conformance \
		$(call PARALLEL,$(STRESS_WORKERS))
	RMQ_STRESS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m stress tests/conformance

# rmq beside Apache RocketMQ (bench/versus_apache.py: Apache's jars and tools, the C++ client of
# the test extras; bench/broker_scale.py: metadata and client churn at scale), then rmq's own
# benchmarks (bench/run_all.py); all write docs/benchmarks.md.
bench: apache $(VENV)/.test-installed
	$(BIN)/python bench/versus_apache.py
	$(BIN)/python bench/broker_scale.py
	$(BIN)/python bench/run_all.py

# Apache RocketMQ 4.9.8 beside rmq (docs/conformance.md): Maven copies the jars named by
# conformance/apache/pom.xml into conformance/apache/lib, javac compiles the scenario drivers
# against them into a jar (a class-data archive takes jars only: tests/conformance/java.py).  Both steps are stamped, so a second run does nothing and needs no network.
APACHE := conformance/apache
DRIVERS := conformance/drivers
DRIVER_SOURCES := $(shell find $(DRIVERS)/src -name '*.java' 2>/dev/null)

$(APACHE)/lib/.stamp: $(APACHE)/pom.xml
	rm -rf $(APACHE)/lib
	mvn -q -B -f $(APACHE)/pom.xml dependency:copy-dependencies -DoutputDirectory=lib
	touch $@

$(DRIVERS)/classes/.stamp: $(APACHE)/lib/.stamp $(DRIVER_SOURCES)
	rm -rf $(DRIVERS)/classes.new
	mkdir -p $(DRIVERS)/classes.new
	javac -nowarn -encoding UTF-8 -d $(DRIVERS)/classes.new \
		-cp '$(APACHE)/lib/*' $(DRIVER_SOURCES)
	cd $(DRIVERS)/classes.new && jar cf drivers.jar rmq
	touch $(DRIVERS)/classes.new/.stamp
	rm -rf $(DRIVERS)/classes && mv $(DRIVERS)/classes.new $(DRIVERS)/classes

apache: $(DRIVERS)/classes/.stamp

# The differential suite: every scenario against Apache's servers and against rmq's; the run
# fails when its matrix differs from the committed docs/conformance.md.
conformance: apache $(VENV)/.test-installed
	$(BYTECODE)
	RMQ_CONFORMANCE_MATRIX=check $(BIN)/python -m pytest -q -p no:cacheprovider tests/conformance --durations=30 \
		$(call PARALLEL,$(CONFORMANCE_WORKERS))

# Rewrite docs/conformance.md from a full run (review the diff before committing it).
conformance-matrix: apache $(VENV)/.test-installed
	$(BYTECODE)
	RMQ_CONFORMANCE_MATRIX=write $(BIN)/python -m pytest -q -p no:cacheprovider tests/conformance \
		$(call PARALLEL,$(CONFORMANCE_WORKERS))

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(APACHE)/lib $(DRIVERS)/classes
	find rmq \( -name '*.so' -o -name '_*.c' \) -delete  # the compiled hot paths (setup.py)
