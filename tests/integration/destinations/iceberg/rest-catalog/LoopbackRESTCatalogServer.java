/*
 * Apache Iceberg's REST catalog test server, listening on 127.0.0.1 only.
 *
 * Why this file exists: Iceberg's own launcher (org.apache.iceberg.rest.RESTCatalogServer,
 * iceberg-open-api 1.11.0 test-fixtures) creates its Jetty server with `new Server(port)`,
 * whose connector has no host and so binds every interface; neither it nor Jetty 12 reads a
 * host from any property or environment variable (checked in both sources). Headwater's test
 * servers listen on 127.0.0.1 only, so this does what that launcher does with the same
 * classes (Iceberg's RESTCatalogAdapter and RESTCatalogServlet over a JdbcCatalog, the
 * same CATALOG_* environment variables), with the connector's host set. It leaves out only
 * the launcher's credential vending for object stores (include-credentials), unused here.
 *
 * Run as a single-file program (Java 17+, a JDK): java -cp 'LIB/*' LoopbackRESTCatalogServer.java
 * Environment: CATALOG_REST_PORT (required), CATALOG_URI (jdbc:sqlite:FILE),
 * CATALOG_WAREHOUSE (file:///FOLDER or s3://BUCKET/PREFIX), any other CATALOG_A_B__C=v as
 * catalog property a.b-c=v. An s3:// warehouse needs the catalog's FileIO to be S3FileIO (the
 * server writes each commit's metadata file itself): CATALOG_IO__IMPL=
 * org.apache.iceberg.aws.s3.S3FileIO with CATALOG_S3_ENDPOINT, CATALOG_S3_PATH__STYLE__ACCESS,
 * CATALOG_S3_ACCESS__KEY__ID, CATALOG_S3_SECRET__ACCESS__KEY, CATALOG_CLIENT_REGION (pom.xml
 * brings iceberg-aws and the AWS SDK bundle; _rest_catalog.py sets them).
 */

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackRESTCatalogServer {
  public static void main(String[] args) throws Exception {
    Map<String, String> properties = new HashMap<>();
    // As RCKUtils.environmentCatalogConfig: CATALOG_JDBC_SCHEMA__VERSION -> jdbc.schema-version.
    System.getenv().forEach((key, value) -> {
      if (key.startsWith("CATALOG_")) {
        properties.put(key.substring("CATALOG_".length()).replaceAll("__", "-")
            .replaceAll("_", ".").toLowerCase(java.util.Locale.ROOT), value);
      }
    });
    properties.putIfAbsent("catalog-impl", "org.apache.iceberg.jdbc.JdbcCatalog");
    properties.putIfAbsent("jdbc.schema-version", "V1");
    int port = Integer.parseInt(properties.get("rest.port"));
    String name = properties.getOrDefault("catalog.name", "rest_backend");
    Catalog catalog = CatalogUtil.buildIcebergCatalog(name, properties, new Configuration());

    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(catalog))),
        "/*");
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    server.join();
  }
}
