"""What a Spark session needs to read and write ``s3a://`` paths (S3 and S3-compatible stores).

Spark's pip package ships the Hadoop client (3.5.0 for PySpark 4.2) but not its S3
connector, ``hadoop-aws``, nor the AWS SDK v2 it calls.  ``hadoop-aws`` declares the
SDK's ``bundle`` (686 MB: every AWS service, shaded), so the smallest set that works
is named instead: the S3 client and its transfer manager, whose transitive
dependencies come to about 18 MB in 36 jars.  Spark already ships Netty, Apache
HttpClient, commons-codec and SLF4J, so Ivy is told to leave those out
(``spark.jars.excludes``): a second copy of each would only shadow or clash with
Spark's.  ``hadoop-aws`` also calls the S3 Analytics Accelerator's classes when a
file system starts (even for the classic input stream), so that jar stays.

The set is small enough that every session gets it (see
:meth:`~headwater.engine._spark.SparkSettings.needs`): a table or source moving to
``s3a://`` then needs settings only (``spark.hadoop.fs.s3a.*``), no other start-up.
"""

from __future__ import annotations

from headwater.config import register_secrets
from headwater.destinations._base import SparkRequirements

#: The Hadoop client jars in PySpark 4.2's ``pyspark/jars`` (``hadoop-client-api-3.5.0``).
HADOOP_VERSION = "3.5.0"
#: The AWS SDK v2 version hadoop-aws 3.5.0 is built against (``aws-java-sdk-v2.version``).
AWS_SDK_VERSION = "2.35.4"
HADOOP_AWS_PACKAGE = f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}"

#: Ivy resolves the rest of the SDK from these (its bundle is excluded below).
PACKAGES = (
    HADOOP_AWS_PACKAGE,
    f"software.amazon.awssdk:s3:{AWS_SDK_VERSION}",
    f"software.amazon.awssdk:s3-transfer-manager:{AWS_SDK_VERSION}",
)

#: What Ivy must not fetch: the 686 MB SDK bundle, and what Spark's own jars provide.
EXCLUDES = (
    "software.amazon.awssdk:bundle",
    "io.netty:*",
    "org.apache.httpcomponents:*",
    "commons-codec:commons-codec",
    "org.slf4j:slf4j-api",
)

_SDK_MODULES = (
    "annotations", "apache-client", "arns", "auth", "aws-core", "aws-query-protocol",
    "aws-xml-protocol", "checksums", "checksums-spi", "crt-core", "endpoints-spi",
    "http-auth", "http-auth-aws", "http-auth-aws-eventstream", "http-auth-spi",
    "http-client-spi", "identity-spi", "json-utils", "metrics-spi", "netty-nio-client",
    "profiles", "protocol-core", "regions", "retries", "retries-spi", "s3",
    "s3-transfer-manager", "sdk-core", "third-party-jackson-core", "utils", "utils-lite",
)

#: Every jar Ivy resolves for :data:`PACKAGES` with :data:`EXCLUDES` (checked against
#: Maven Central on 2026-11-26), for ``mvn dependency:copy``, which copies no dependencies.
MAVEN_ARTIFACTS = (
    HADOOP_AWS_PACKAGE,
    *(f"software.amazon.awssdk:{module}:{AWS_SDK_VERSION}" for module in _SDK_MODULES),
    "software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:1.3.1",
    "software.amazon.eventstream:eventstream:1.0.1",
    "org.reactivestreams:reactive-streams:1.0.4",
    "org.wildfly.openssl:wildfly-openssl:2.2.5.Final",
)

S3A_NEEDS = SparkRequirements(
    packages=PACKAGES,
    maven_artifacts=MAVEN_ARTIFACTS,
    conf={"spark.jars.excludes": ",".join(EXCLUDES)},
)


def s3a_conf(endpoint: str | None = None, *, access_key: str | None = None,
             secret_key: str | None = None, path_style: bool = False,
             region: str | None = None) -> dict[str, str]:
    """Spark settings pointing ``s3a://`` at a store: an S3-compatible server's
    ``http://`` endpoint (TLS off, path-style addressing) or AWS itself (no endpoint).

    Without keys the connector's default credential chain applies (environment,
    profile, instance role).  The keys are Hadoop settings, so they reach executors
    in the job's configuration, never in a log line Headwater writes.
    """
    conf: dict[str, str] = {}
    if endpoint is not None:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        if endpoint.startswith("http://"):
            conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = "false"
    if path_style:
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
    if region is not None:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
    if access_key is not None and secret_key is not None:
        register_secrets([secret_key])
        conf["spark.hadoop.fs.s3a.access.key"] = access_key
        conf["spark.hadoop.fs.s3a.secret.key"] = secret_key
    return conf
