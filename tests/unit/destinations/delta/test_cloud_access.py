"""Azure reached with the settings Spark's ABFS/WASB connectors read (``fs.azure.*``),
translated for delta-rs and pyarrow, secrets kept out of ``repr``."""

from __future__ import annotations

from headwater.destinations._table_files._azure import AzureAccess, AzureLocation
from headwater.destinations._table_files._store import TableFolder, store_folder

KEY = "a2V5LWRvLW5vdC1wcmludA=="


def test_an_abfss_location_with_its_shared_key() -> None:
    location = "abfss://raw@acct.dfs.core.windows.net/lake/users"
    folder = store_folder(location, {
        "fs.azure.account.key.acct.dfs.core.windows.net": KEY}.get)
    assert folder == TableFolder("az://raw/lake/users", AzureAccess(
        "acct", "https://acct.blob.core.windows.net", account_key=KEY))
    assert folder.storage_options() == {
        "azure_storage_account_name": "acct",
        "azure_storage_endpoint": "https://acct.blob.core.windows.net",
        "azure_storage_account_key": KEY}
    assert KEY not in repr(folder) and folder.store is not None
    assert folder.store.secrets == [KEY]


def test_wasbs_sas_and_abfss_oauth_client_credentials() -> None:
    wasb = AzureLocation.parse("wasbs://raw@acct.blob.core.windows.net/lake")
    assert wasb is not None and wasb.wasb and wasb.key == "lake"
    settings = {"fs.azure.sas.raw.acct.blob.core.windows.net": "?sv=1&sig=s"}
    sas = AzureAccess.from_hadoop(settings.get, wasb)
    assert sas.sas_token == "sv=1&sig=s" and sas.secrets == ["sv=1&sig=s"]
    abfs = AzureLocation.parse("abfss://raw@acct.dfs.core.windows.net/lake")
    assert abfs is not None
    oauth = {"fs.azure.account.auth.type.acct.dfs.core.windows.net": "OAuth",
             "fs.azure.account.oauth.provider.type":
                 "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider",
             "fs.azure.account.oauth2.client.id": "app",
             "fs.azure.account.oauth2.client.secret": "shh",
             "fs.azure.account.oauth2.client.endpoint":
                 "https://login.microsoftonline.com/tenant-1/oauth2/token"}
    access = AzureAccess.from_hadoop(oauth.get, abfs)
    assert (access.client_id, access.tenant_id, access.secrets) == ("app", "tenant-1", ["shh"])
    assert AzureAccess.untranslated(oauth.get, abfs) is None
    managed = {**oauth, "fs.azure.account.oauth.provider.type":
               "org.apache.hadoop.fs.azurebfs.oauth2.MsiTokenProvider"}
    assert "MsiTokenProvider, which only hadoop-azure follows" in (
        AzureAccess.untranslated(managed.get, abfs) or "")


def test_azure_keys_in_a_spark_conf_are_secrets_from_the_start() -> None:
    from headwater.config import mask, register_spark_conf_secrets

    register_spark_conf_secrets({
        "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": "hw-az-key-1",
        "spark.hadoop.fs.azure.sas.raw.acct.blob.core.windows.net": "sv=hw-az-sas-1",
        "spark.hadoop.fs.azure.sas.fixed.token": "sv=hw-az-sas-2"})
    assert mask("hw-az-key-1 sv=hw-az-sas-1 sv=hw-az-sas-2").count("hw-az") == 0
