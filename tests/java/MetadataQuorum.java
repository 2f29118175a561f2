// Kafka's own Admin client asks a broker for the metadata quorum (describeMetadataQuorum, i.e.
// DescribeQuorum) and prints what it decoded:
//   quorum leader <id> epoch <epoch> hw <high watermark>
//   voter|observer <id> <directory id> <log end offset> <last fetch ms | -> <last caught up ms | ->
//   node <id> <listener name>://<host>:<port>
import java.util.*;
import org.apache.kafka.clients.admin.*;

public class MetadataQuorum {
    private static String time(OptionalLong value) {
        return value.isPresent() ? Long.toString(value.getAsLong()) : "-";
    }

    private static void print(String kind, List<QuorumInfo.ReplicaState> replicas) {
        for (QuorumInfo.ReplicaState r : replicas) {
            System.out.println(kind + " " + r.replicaId() + " " + r.replicaDirectoryId() + " " + r.logEndOffset()
                + " " + time(r.lastFetchTimestamp()) + " " + time(r.lastCaughtUpTimestamp()));
        }
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("default.api.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        try (Admin admin = Admin.create(p)) {
            QuorumInfo info = admin.describeMetadataQuorum().quorumInfo().get();
            System.out.println("quorum leader " + info.leaderId() + " epoch " + info.leaderEpoch() + " hw " + info.highWatermark());
            print("voter", info.voters());
            print("observer", info.observers());
            for (QuorumInfo.Node node : info.nodes().values()) {
                for (RaftVoterEndpoint e : node.endpoints()) {
                    System.out.println("node " + node.nodeId() + " " + e);
                }
            }
        }
    }
}
