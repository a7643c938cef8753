// Apache's mqadmin (MQAdminStartup.main) followed by an exit as soon as it returns.  mqadmin
// itself never calls System.exit: after the command has printed its result the JVM waits for
// Netty's event loops to shut down gracefully (a 2 s quiet period) before it ends, which makes
// every call take ~3 s longer than the command.  This wrapper changes nothing else: the same
// class parses the same arguments and prints the same output.  Commands that keep running after
// main returns (startMonitoring) must be started with MQAdminStartup directly.
package rmq.conformance;

import org.apache.rocketmq.tools.command.MQAdminStartup;

public final class MqAdmin {
    private MqAdmin() {
    }

    public static void main(String[] args) {
        MQAdminStartup.main(args);
        System.out.flush();
        System.err.flush();
        System.exit(0);
    }
}
