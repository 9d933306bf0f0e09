"""Optional dependencies fail with the extra that installs them."""

import sys

import pytest

from placerl._extras import EXTRAS, MissingExtraError, require


@pytest.mark.parametrize(("module", "extra"), sorted(EXTRAS.items()))
def test_a_missing_module_names_its_extra(monkeypatch, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(MissingExtraError, match=rf"pip install 'placerl\[{extra}\]'"):
        require(module, "the feature")


def test_an_installed_module_is_returned():
    assert require("json", "tests").dumps([]) == "[]"


def test_a_broken_import_inside_an_installed_module_is_not_hidden(tmp_path, monkeypatch):
    (tmp_path / "brokenpkg.py").write_text("import not_a_real_module_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="not_a_real_module_xyz"):
        require("brokenpkg", "tests")
