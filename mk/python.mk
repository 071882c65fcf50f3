# mk/python.mk - the Python module (python/whisper_stem), included by the Makefile.
#
#   make test-python                 python/tests (unittest) against $(BUILD)/libwhisper-stem.so.0,
#                                    $(BUILD)/whisper-stem and $(BUILD)/ws-mkmodel
#   make install-python PREFIX=...   copies the package into PYTHON_SITE and records
#                                    $(PREFIX)/lib, where `make install` puts the library
#   make uninstall-python PREFIX=...
#
# Knobs: WS_PYTHON (default Debian's /usr/bin/python3, which has python3-numpy; the tests
# also use python3-torch and, when importable, transformers), PYTHON_SITE (default: see
# python/site-dir.py: /usr/local/lib/python3.X/dist-packages for /usr/local,
# /usr/lib/python3/dist-packages for /usr), DESTDIR.
# pip works too, offline: python/pyproject.toml says how.

WS_PYTHON   ?= /usr/bin/python3
PY_LIB      := $(BUILD)/libwhisper-stem.so.0
PY_LIBDIR    = $(or $(LIBDIR),$(PREFIX)/lib)
PYTHON_SITE ?= $(shell $(WS_PYTHON) python/site-dir.py $(PREFIX))
PY_FILES    := $(wildcard python/whisper_stem/*.py)

.PHONY: test-python install-python uninstall-python wheel test-wheel

test-python: $(PY_LIB) $(BUILD)/whisper-stem $(BUILD)/ws-mkmodel
	WHISPER_STEM_LIB=$(abspath $(PY_LIB)) WS_BUILD=$(abspath $(BUILD)) PYTHONPATH=$(abspath python) \
	    PYTHONDONTWRITEBYTECODE=1 $(WS_PYTHON) -m unittest discover -s python/tests -t python -v

# make wheel: $(BUILD)/dist/whisper_stem-VERSION-py3-none-linux_ARCH.whl, the package with
# libwhisper-stem.so.0 and every non-glibc library it needs inside (scripts/bundle.sh on
# the library alone, then scripts/wheel.py); pip install it offline into any Python >= 3.9
# with numpy. make test-wheel installs it into a fresh venv made from the python3 on PATH
# and runs the Python tests against that installed copy (scripts/test-wheel.sh).
wheel: $(PY_LIB)
	rm -rf $(BUILD)/wheel-src $(BUILD)/dist
	mkdir -p $(BUILD)/wheel-src
	cp -L $(PY_LIB) $(BUILD)/wheel-src/
	scripts/bundle.sh $(BUILD)/wheel-src $(BUILD)/wheel-bundle
	$(WS_PYTHON) scripts/wheel.py $(BUILD)/wheel-bundle $(BUILD)/dist

test-wheel: wheel $(BUILD)/whisper-stem $(BUILD)/ws-mkmodel
	scripts/test-wheel.sh $(BUILD)

install-python:
	install -d $(DESTDIR)$(PYTHON_SITE)/whisper_stem
	install -m 644 $(filter-out %/_config.py,$(PY_FILES)) $(DESTDIR)$(PYTHON_SITE)/whisper_stem/
	$(WS_PYTHON) -c 'import sys; print("\"\"\"Written by make install-python.\"\"\"\nLIBDIR = %r" % sys.argv[1])' \
	    '$(PY_LIBDIR)' > $(DESTDIR)$(PYTHON_SITE)/whisper_stem/_config.py
	@test -e $(DESTDIR)$(PY_LIBDIR)/libwhisper-stem.so.0 || \
	    echo "install-python: no $(DESTDIR)$(PY_LIBDIR)/libwhisper-stem.so.0 yet: run make install PREFIX=$(PREFIX)"
	@echo "install-python: whisper_stem in $(PYTHON_SITE), library from $(PY_LIBDIR)"

uninstall-python:
	rm -rf $(DESTDIR)$(PYTHON_SITE)/whisper_stem
