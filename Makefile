# footnote: two commands for a newcomer — `make demo` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.footnote-installed
DEMO_HOME ?= .footnote-demo
DEMO_QUESTION ?= Who invented the Fresnel lens?

.PHONY: install demo test test-shared lint typecheck unit integration reader shape clean

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

# Two workers (pytest-xdist): the suite waits on servers, browsers and subprocesses as much as it
# computes, so two share 2 cores well (about 8 minutes on 2 cores:
# benchmarks/results/test-suite-two-workers-20261207-1443.json.xz).
PYTEST_WORKERS ?= 2

test: lint typecheck
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS)

# Rebuilds the shipped sentence reader from ../shared's SQuAD articles and the committed technical
# questions, with a fixed seed: the ranking head first, then the answer head on its weights
# (docs/answers.md, "The sentence reader"; about 50 minutes on 2 cores).
READER_DATA := --held-out Steam_engine --held-out Islamism --held-out Scottish_Parliament \
	--extra scripts/data/reader-questions.jsonl --extra scripts/data/reader-questions.jsonl \
	--extra scripts/data/reader-questions-seed11.jsonl --extra scripts/data/reader-questions-seed11.jsonl
READER_STAGE ?= /tmp/footnote-reader-ranking

reader: install
	$(BIN)/footnote train reader $(READER_DATA) --out $(READER_STAGE)
	$(BIN)/footnote train reader $(READER_DATA) --answer-head --start $(READER_STAGE).pt --epochs 0.4

# Rebuilds the answer-shape model (several passages or one fact) from ../shared's broad-dev, docqa-dev,
# squad2-dev and rgb-zh-dev questions, and list questions made from docqa-dev's headings, over
# multilingual-e5-small query embeddings (under a minute on 2 cores).
shape: install
	$(BIN)/footnote train shape --data ../shared/data

# The whole suite again with every index on a PostgreSQL catalog and a Chroma server (CI runs both).
test-shared: install
	FOOTNOTE_TEST_STORES=shared $(BIN)/python -m pytest -n $(PYTEST_WORKERS)

clean:
	rm -rf $(DEMO_HOME) .pytest_cache .mypy_cache .ruff_cache
