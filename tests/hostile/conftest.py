"""The real services' fixtures, for the hostile logs run through the store and live."""

from tests.integration.conftest import admin_url, empty_database, migrated_database
from tests.integration.kafka.conftest import bootstrap

__all__ = ["admin_url", "bootstrap", "empty_database", "migrated_database"]
