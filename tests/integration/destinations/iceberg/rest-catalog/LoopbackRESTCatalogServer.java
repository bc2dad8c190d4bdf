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
 *
 * What production REST catalogs do and Iceberg's reference classes do only in part, each behind
 * an environment variable of its own (not CATALOG_*: they are no catalog properties):
 * - HEADWATER_REQUEST_LOG=FILE: one line per request, "METHOD PATH[?QUERY] delegation=VALUE",
 *   VALUE the X-Iceberg-Access-Delegation header or "-" (the tests read which warehouse
 *   GET /v1/config was asked for, and whether vended credentials were asked for). Never the
 *   Authorization header, nor a body.
 * - HEADWATER_CLIENT_CREDENTIAL=ID:SECRET: the adapter serves POST /v1/oauth/tokens itself but
 *   grants any client_credentials request the token "client-credentials-token:sub=<client_id>";
 *   this filter answers 401 (OAuth2's invalid_client) unless the form carries this client id and
 *   secret, and 401 (Iceberg's NotAuthorizedException) to any other call without
 *   "Authorization: Bearer client-credentials-token:sub=ID", as Polaris or Lakekeeper would.
 * - HEADWATER_READER_CREDENTIAL=ID:SECRET (with HEADWATER_CLIENT_CREDENTIAL): a second client
 *   granted a token the same way, a read-only one: its calls other than GET and HEAD are refused
 *   with 403 (Iceberg's ForbiddenException), as a principal with read privileges only is by
 *   Polaris (TABLE_READ_DATA without TABLE_WRITE_DATA).
 * - HEADWATER_REFUSE_FILE=FILE: a switch a test flips mid-sync. While FILE exists, its word
 *   says what every token is refused: "writes" (403 to every call but GET and HEAD); "all" (401
 *   to every call, as to a token revoked or expired; the token endpoint still answers);
 *   "revoked" ("all", and the token endpoint refuses every client: the credential revoked);
 *   "expire-at-write" and "revoke-at-write" (the first call but GET and HEAD turns the switch
 *   to "all" or "revoked" and is refused as it then is: a token or credential that goes right
 *   at a commit); "refuse-answer-once" (the first call but GET and HEAD is carried out, its
 *   answer replaced by a 403 and the switch removed: a gateway that refuses the answer of a
 *   commit the catalog made); "refuse-answer-then-all" (the same, but the switch turns to "all":
 *   a commit made whose answer is lost, and every call after it refused, its lookup included).
 * - HEADWATER_VEND_<KEY>=VALUE (KEY spelled as for CATALOG_*): added to the "config" of every
 *   load-table answer, as the reference launcher's include-credentials does (it vends the
 *   catalog's own S3 keys whether asked or not; vended-credential servers put short-lived keys
 *   there).
 */

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.rest.HTTPRequest;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
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
    Map<String, String> vended = new HashMap<>();
    System.getenv().forEach((key, value) -> {
      if (key.startsWith("HEADWATER_VEND_")) {
        vended.put(key.substring("HEADWATER_VEND_".length()).replaceAll("__", "-")
            .replaceAll("_", ".").toLowerCase(java.util.Locale.ROOT), value);
      }
    });
    context.addServlet(
        new ServletHolder(new RESTCatalogServlet(new VendingAdapter(catalog, vended))), "/*");
    context.addFilter(new FilterHolder(new Gate(System.getenv("HEADWATER_REQUEST_LOG"),
        System.getenv("HEADWATER_CLIENT_CREDENTIAL"), System.getenv("HEADWATER_READER_CREDENTIAL"),
        System.getenv("HEADWATER_REFUSE_FILE"))), "/*", EnumSet.of(DispatcherType.REQUEST));
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

/** The reference adapter, its load-table answers carrying the HEADWATER_VEND_* config. */
class VendingAdapter extends RESTCatalogAdapter {
  private final Map<String, String> vended;

  VendingAdapter(Catalog catalog, Map<String, String> vended) {
    super(catalog);
    this.vended = vended;
  }

  // The servlet's one call into the adapter (handleRequest takes the package's own Route).
  @Override
  protected <T extends RESTResponse> T execute(HTTPRequest request, Class<T> responseType,
      Consumer<ErrorResponse> errors, Consumer<Map<String, String>> headers) {
    T response = super.execute(request, responseType, errors, headers);
    if (vended.isEmpty() || !(response instanceof LoadTableResponse)) {
      return response;
    }
    LoadTableResponse table = (LoadTableResponse) response;
    return responseType.cast(LoadTableResponse.builder().withTableMetadata(table.tableMetadata())
        .addAllConfig(table.config()).addAllConfig(vended)
        .addAllCredentials(table.credentials()).build());
  }
}

/**
 * Logs each request, and (with a client credential) requires OAuth2 as production servers do;
 * a read-only client and a switch refuse what a test asks (the file's header says how).
 */
class Gate implements Filter {
  private static final String TOKENS = "/v1/oauth/tokens";
  private static final String BEARER = "Bearer client-credentials-token:sub=";
  private final Path log;
  private final String[] client;
  private final String[] reader;
  private final Path refuseFile;

  Gate(String log, String credential, String readerCredential, String refuseFile) {
    this.log = log == null ? null : Path.of(log);
    this.client = split(credential);
    this.reader = split(readerCredential);
    this.refuseFile = refuseFile == null ? null : Path.of(refuseFile);
  }

  /** ID:SECRET as {ID, SECRET}, or null. */
  private static String[] split(String credential) {
    int colon = credential == null ? -1 : credential.indexOf(':');
    return colon < 0 ? null
        : new String[] {credential.substring(0, colon), credential.substring(colon + 1)};
  }

  private static boolean grants(String[] credential, Map<String, String> form) {
    return credential != null && credential[0].equals(form.get("client_id"))
        && credential[1].equals(form.get("client_secret"));
  }

  @Override
  public void doFilter(ServletRequest plain, ServletResponse plainResponse, FilterChain chain)
      throws IOException, ServletException {
    HttpServletRequest request = (HttpServletRequest) plain;
    HttpServletResponse response = (HttpServletResponse) plainResponse;
    String path = request.getRequestURI();
    String method = request.getMethod();
    record(method + " " + path
        + (request.getQueryString() == null ? "" : "?" + request.getQueryString())
        + " delegation=" + orDash(request.getHeader("X-Iceberg-Access-Delegation")));
    boolean reads = method.equals("GET") || method.equals("HEAD");
    String switched = switched();
    if (switched.endsWith("-at-write") && !reads && !path.equals(TOKENS)) {
      switched = switched.equals("revoke-at-write") ? "revoked" : "all";
      Files.writeString(refuseFile, switched, StandardCharsets.UTF_8);
    }
    boolean revoked = switched.equals("revoked");
    if (revoked) {
      switched = "all";
    }
    if (path.equals(TOKENS) && client != null) {
      byte[] body = request.getInputStream().readAllBytes();
      Map<String, String> form = form(new String(body, StandardCharsets.UTF_8));
      if (!revoked && (grants(client, form) || grants(reader, form))) {
        chain.doFilter(new CachedBody(request, body), response);
      } else {
        refuse(response, 401, "{\"error\":\"invalid_client\","
            + "\"error_description\":\"unknown client or wrong secret\"}");
      }
    } else if (client != null && !(BEARER + client[0]).equals(request.getHeader("Authorization"))
        && (reader == null || !(BEARER + reader[0]).equals(request.getHeader("Authorization")))) {
      refuse(response, 401, notAuthorized("no valid bearer token"));
    } else if (switched.equals("all") && !path.equals(TOKENS)) {
      refuse(response, 401, notAuthorized("the token was revoked"));
    } else if (switched.startsWith("refuse-answer-") && !reads && !path.equals(TOKENS)) {
      if (switched.equals("refuse-answer-then-all")) {
        Files.writeString(refuseFile, "all", StandardCharsets.UTF_8);
      } else {
        Files.deleteIfExists(refuseFile);
      }
      chain.doFilter(request, new Unanswered(response));
      response.reset();
      refuse(response, 403, "{\"error\":{\"message\":\"Forbidden: the gateway refused the "
          + "answer\",\"type\":\"ForbiddenException\",\"code\":403}}");
    } else if (!reads && !path.equals(TOKENS) && (switched.equals("writes") || (reader != null
        && (BEARER + reader[0]).equals(request.getHeader("Authorization"))))) {
      refuse(response, 403, "{\"error\":{\"message\":\"Forbidden: this principal may read, "
          + "not write\",\"type\":\"ForbiddenException\",\"code\":403}}");
    } else {
      chain.doFilter(request, response);
    }
  }

  private static String notAuthorized(String why) {
    return "{\"error\":{\"message\":\"Not authorized: " + why + "\","
        + "\"type\":\"NotAuthorizedException\",\"code\":401}}";
  }

  /** The switch's word (the file's header: "writes", "all"...), or "" while it does not exist. */
  private String switched() throws IOException {
    if (refuseFile == null || !Files.exists(refuseFile)) {
      return "";
    }
    return Files.readString(refuseFile, StandardCharsets.UTF_8).trim();
  }

  private static String orDash(String value) {
    return value == null ? "-" : value;
  }

  private static Map<String, String> form(String body) {
    Map<String, String> fields = new HashMap<>();
    for (String pair : body.split("&")) {
      int equals = pair.indexOf('=');
      if (equals > 0) {
        fields.put(URLDecoder.decode(pair.substring(0, equals), StandardCharsets.UTF_8),
            URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8));
      }
    }
    return fields;
  }

  private static void refuse(HttpServletResponse response, int status, String json)
      throws IOException {
    response.setStatus(status);
    response.setContentType("application/json");
    response.getWriter().write(json);
  }

  private synchronized void record(String line) throws IOException {
    if (log != null) {
      Files.writeString(log, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    }
  }
}

/** A response whose body the servlet writes to nowhere (the filter answers in its place). */
class Unanswered extends HttpServletResponseWrapper {
  private final PrintWriter writer = new PrintWriter(OutputStream.nullOutputStream());

  Unanswered(HttpServletResponse response) {
    super(response);
  }

  @Override
  public ServletOutputStream getOutputStream() {
    return new ServletOutputStream() {
      @Override public void write(int b) { }
      @Override public boolean isReady() { return true; }
      @Override public void setWriteListener(WriteListener listener) { }
    };
  }

  @Override public PrintWriter getWriter() { return writer; }
  @Override public void flushBuffer() { }
  @Override public void setContentLength(int length) { }
  @Override public void setContentLengthLong(long length) { }
}

/** A request whose body, read once by the filter, the servlet reads again. */
class CachedBody extends HttpServletRequestWrapper {
  private final byte[] body;

  CachedBody(HttpServletRequest request, byte[] body) {
    super(request);
    this.body = body;
  }

  @Override
  public ServletInputStream getInputStream() {
    ByteArrayInputStream bytes = new ByteArrayInputStream(body);
    return new ServletInputStream() {
      @Override public int read() { return bytes.read(); }
      @Override public boolean isFinished() { return bytes.available() == 0; }
      @Override public boolean isReady() { return true; }
      @Override public void setReadListener(ReadListener listener) {
        throw new UnsupportedOperationException("synchronous reads only");
      }
    };
  }

  @Override
  public BufferedReader getReader() {
    return new BufferedReader(new InputStreamReader(getInputStream(), StandardCharsets.UTF_8));
  }
}
