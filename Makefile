# corral: the two commands a user needs are `make demo` and `make test`.
# Both install what they need first (Debian packages, Python packages), then build.

PYTHON ?= python3
BUILD  := $(CURDIR)/build
export BUILD

DEB_PACKAGES := build-essential valgrind libjemalloc2 libmimalloc2.0 libunwind-dev \
                sqlite3 git binutils lua5.4 chromium
PY_PACKAGES  := -e .[test]

.PHONY: all setup deps-deb deps-py build runtime profiler bench demo test mutants clean

all: build

# Installs only what is missing, so a second run costs a few dpkg queries.
deps-deb:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "corral: installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

deps-py:
	@$(PYTHON) -m pip --version >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq python3-pip)
	@$(PYTHON) -m pip install -q --disable-pip-version-check $(PY_PACKAGES)

setup: deps-deb deps-py

build: runtime profiler bench

runtime:
	$(MAKE) -C runtime BUILD=$(BUILD) all debug

profiler:
	$(MAKE) -C profiler BUILD=$(BUILD)

bench: runtime
	$(MAKE) -C bench BUILD=$(BUILD)

demo: setup build
	$(PYTHON) -m corral demo

# Folders join the run once git tracks them (an empty folder is not in a clone).
TEST_PATHS := tests $(wildcard runtime/tests profiler/tests)

test: setup build
	$(PYTHON) -m pytest -q $(TEST_PATHS)

# Mutation testing (tests/mutants): not part of `make test`; about a minute a mutant.
mutants: setup build
	$(PYTHON) -m tests.mutants

clean:
	rm -rf $(BUILD)
