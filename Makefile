# Thin wrappers around scripts/; each creates or reuses .venv/ first.
# Pass extra arguments with ARGS, e.g. make test ARGS='-k aba -x'.
.PHONY: demo test bench setup clean

demo:
	./scripts/demo.sh $(ARGS)

test:
	./scripts/test.sh $(ARGS)

bench:
	./scripts/bench.sh $(ARGS)

setup:
	./scripts/setup-venv.sh --dev

clean:
	rm -rf .venv build install log .pytest_cache
