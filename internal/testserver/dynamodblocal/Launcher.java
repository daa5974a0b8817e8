// Launcher runs DynamoDB Local on 127.0.0.1 only. The stock ServerRunner binds every
// interface and has no host flag; integration tests must keep servers on loopback. It builds
// the server exactly as ServerRunner does (same command-line flags), then points each Jetty
// connector at 127.0.0.1 before starting it. The Jetty Server sits in the private field
// "server" of DynamoDBProxyServer, so it is reached by reflection.
//
// Run as a single source file (Java 11+): java -cp "lib/*" Launcher.java -inMemory -port N ...
// internal/testserver embeds this file and writes it into the server's directory.

import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class Launcher {
    public static void main(String[] args) throws Exception {
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field f = DynamoDBProxyServer.class.getDeclaredField("server");
        f.setAccessible(true);
        Server jetty = (Server) f.get(proxy);
        int bound = 0;
        for (Connector c : jetty.getConnectors()) {
            if (c instanceof ServerConnector) {
                ((ServerConnector) c).setHost("127.0.0.1");
                bound++;
            }
        }
        if (bound == 0) {
            System.err.println("Launcher: no Jetty ServerConnector found; refusing to bind all interfaces");
            System.exit(2);
        }
        proxy.start();
        System.out.println("Launcher: DynamoDB Local listening on 127.0.0.1");
        proxy.join();
    }
}
