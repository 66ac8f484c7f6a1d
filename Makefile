# Text-to-SQL Agent Studio: `make run` starts the app, `make test` runs every test.
# Both do all set-up first (virtual environment, pinned packages, embedded model, sample databases).
# `make bench` lists the benchmarks of bench/ (what each needs and costs) and runs those that call
# no model; the model-bound ones run by name: .venv/bin/python bench/run_bench.py cold-start

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
ADDRESS ?= localhost
STAMP  := $(VENV)/.installed
REQS   := requirements.txt requirements-dev.txt requirements-model.txt

.PHONY: run test setup model sample-dbs fast-model bench clean

run: setup
	$(BIN)/python -m streamlit run app.py --server.port $(PORT) --server.address $(ADDRESS) \
	  --server.headless true --browser.gatherUsageStats false

test: setup
	$(BIN)/python -m pytest

setup: $(STAMP) model sample-dbs

$(STAMP): $(REQS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv || true
	if [ -x $(BIN)/uv ]; then \
	  $(BIN)/uv pip install -q --python $(BIN)/python $(addprefix -r ,$(REQS)); \
	else \
	  $(BIN)/python -m pip install -q $(addprefix -r ,$(REQS)); \
	fi
	touch $(STAMP)

model: $(STAMP)
	$(BIN)/python -m agents model prepare

fast-model: $(STAMP)
	$(BIN)/python -m pip install -q -r requirements-model-fast.txt
	$(BIN)/python -m agents model prepare --fast

sample-dbs: $(STAMP)
	$(BIN)/python -m sample_dbs.build

bench: $(STAMP)
	$(BIN)/python bench/run_bench.py

clean:
	rm -rf $(VENV) sample_dbs/*.sqlite .pytest_cache
