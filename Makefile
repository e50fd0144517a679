# Two entry points: `make demo` (plan the example inventory, no servers) and `make test`
# (the whole suite). Both install what they need into .venv themselves.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INVENTORY ?= inventory-examples/four-gpu-server
PLAN_DIR ?= build/plan
COLLECTION_LINK := .collections/ansible_collections/gpushare/cluster

.PHONY: demo test venv dev-venv collection-link unit sanity lint clean build mutation

demo: venv collection-link
	$(BIN)/ansible-playbook -i $(INVENTORY)/hosts.yml playbooks/plan.yml -e gpushare_plan_dir=$(abspath $(PLAN_DIR))

test: dev-venv collection-link
	PATH=$(abspath $(BIN)):$$PATH tests/run-all.sh

venv: $(VENV)/.runtime-installed
$(VENV)/.runtime-installed: requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

dev-venv: $(VENV)/.dev-installed
$(VENV)/.dev-installed: requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(VENV)/.runtime-installed $@

# Playbooks in this checkout resolve gpushare.cluster.* to the working tree (ansible.cfg).
collection-link: $(COLLECTION_LINK)
$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../.. $@

build: venv
	$(BIN)/ansible-galaxy collection build --force --output-path build/

unit: dev-venv collection-link
	PATH=$(abspath $(BIN)):$$PATH tests/suites/10-unit.sh

# Mutation testing of the planners, the Kueue renderer and the advisor (docs/testing.md,
# "Mutation testing"). Slow, so not part of `make test`. MODULES="planners/plan ..." narrows it.
mutation: dev-venv
	PATH=$(abspath $(BIN)):$$PATH tests/mutation/run.sh $(MODULES)

clean:
	rm -rf build .collections .pytest_cache .hypothesis
