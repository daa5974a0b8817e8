// A Geode server with an embedded locator and the developer REST API, in one JVM, for the
// geode driver's integration tests (internal/testserver/geode.go). Run from source (java
// GeodeServer.java ...) with Geode's jars on the class path and GEODE_HOME pointing at a
// directory whose tools/Extensions holds geode-web-api-VERSION.war, where Geode looks for
// the REST API's web application.
//
// Arguments: locator port, cache server port, HTTP (REST) port, working directory. Every
// port is bound to 127.0.0.1. The PARTITION region "ndbench" is declared in a cache.xml
// written to the working directory, so it exists before the REST API answers (a region
// created after start left a restarting server answering 404 to puts for a moment). It
// prints NDBENCH-GEODE-READY and runs until killed.
//
// A separate LocatorLauncher in the same JVM does not work: a JVM holds one distributed
// system connection, so the server's start fails with "A connection to a distributed
// system already exists in this VM"; the start-locator property runs the locator inside
// the server's member instead.

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.geode.distributed.ServerLauncher;

public class GeodeServer {
  public static void main(String[] args) throws Exception {
    String locator = "127.0.0.1[" + Integer.parseInt(args[0]) + "]";
    Path cacheXml = Path.of(args[3], "cache.xml");
    Files.writeString(cacheXml, String.join("\n",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
        "<cache xmlns=\"http://geode.apache.org/schema/cache\"",
        "       xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"",
        "       xsi:schemaLocation=\"http://geode.apache.org/schema/cache http://geode.apache.org/schema/cache/cache-1.0.xsd\"",
        "       version=\"1.0\">",
        "  <region name=\"ndbench\" refid=\"PARTITION\"/>",
        "</cache>", ""));
    ServerLauncher server = new ServerLauncher.Builder()
        .setMemberName("ndbench-server")
        .setServerPort(Integer.parseInt(args[1]))
        .setServerBindAddress("127.0.0.1")
        .setWorkingDirectory(args[3])
        .set("start-locator", locator)
        .set("locators", locator)
        .set("bind-address", "127.0.0.1")
        .set("jmx-manager", "false")
        .set("enable-cluster-configuration", "false")
        .set("use-cluster-configuration", "false")
        .set("start-dev-rest-api", "true")
        .set("http-service-port", String.valueOf(Integer.parseInt(args[2])))
        .set("http-service-bind-address", "127.0.0.1")
        .set("cache-xml-file", cacheXml.toString())
        .set("log-level", "warning")
        .build();
    server.start();
    System.out.println("NDBENCH-GEODE-READY");
    Thread.currentThread().join();
  }
}
