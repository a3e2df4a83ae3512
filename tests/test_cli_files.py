"""Files and the CLI never destroy or fake anything: exports never overwrite the store or an
existing file, killed exports leave nothing behind, stores and exports are owner-only, missing
stores are not created, unknown tenants are errors, and every failure is one line."""

from __future__ import annotations

import pytest

from store.errors import UnknownTenantError
from store.tenancy import Tenant, require_tenant


def test_require_tenant_names_close_matches(store):
    store.update_block("b", "v", user_id="Alice")
    store.update_block("b", "v", user_id="carol")
    store.update_block("b", "v", user_id="rob")
    with store._db.read() as conn:
        assert require_tenant(conn, Tenant.of("Alice")) is True
        assert require_tenant(conn, Tenant.of("alice"), missing_ok=True) is False
        assert require_tenant(conn, Tenant.of(None), missing_ok=True) is False
        with pytest.raises(UnknownTenantError, match="'Alice'") as caught:
            require_tenant(conn, Tenant.of("alice"))
        assert caught.value.close_matches == ["Alice"]
        with pytest.raises(UnknownTenantError) as caught:
            require_tenant(conn, Tenant.of("carl"))
        assert caught.value.close_matches == ["carol"]
        with pytest.raises(UnknownTenantError) as caught:
            require_tenant(conn, Tenant.of("bob"))
        assert caught.value.close_matches == []
        with pytest.raises(UnknownTenantError, match="anonymous"):
            require_tenant(conn, Tenant.of(None))
