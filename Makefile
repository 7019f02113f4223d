# footnote: two commands for a newcomer — `make demo` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.footnote-installed
DEMO_HOME ?= .footnote-demo
DEMO_QUESTION ?= Who invented the Fresnel lens?

.PHONY: install demo test test-shared lint typecheck unit integration clean

install: $(STAMP)

$(STAMP): pyproject.toml scripts/install.sh
	bash scripts/install.sh
	touch $(STAMP)

demo: install
	FOOTNOTE_HOME=$(DEMO_HOME) $(BIN)/footnote ingest examples/sample
	FOOTNOTE_HOME=$(DEMO_HOME) $(BIN)/footnote ask "$(DEMO_QUESTION)"

lint: install
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/ruff format --check src tests scripts benchmarks
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest tests/unit

integration: install
	$(BIN)/python -m pytest tests/integration

test: lint typecheck
	$(BIN)/python -m pytest

# The whole suite again with every index on a PostgreSQL catalog and a Chroma server (CI runs both).
test-shared: install
	FOOTNOTE_TEST_STORES=shared $(BIN)/python -m pytest

clean:
	rm -rf $(DEMO_HOME) .pytest_cache .mypy_cache .ruff_cache
