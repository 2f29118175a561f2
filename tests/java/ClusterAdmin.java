// Kafka's own Admin client against a broker: describeCluster, then a preferred and an unclean
// leader election for partition 0 of `topic` and of a topic that does not exist. Prints:
//   cluster <id> controller <id>
//   node <id> <host> <port>
//   elect <TYPE> <topic>-<partition> <ok | exception class simple name>
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.*;

public class ClusterAdmin {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("default.api.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        try (Admin admin = Admin.create(p)) {
            DescribeClusterResult cluster = admin.describeCluster();
            System.out.println("cluster " + cluster.clusterId().get() + " controller " + cluster.controller().get().id());
            for (Node node : cluster.nodes().get()) {
                System.out.println("node " + node.id() + " " + node.host() + " " + node.port());
            }
            Set<TopicPartition> partitions = new LinkedHashSet<>(
                Arrays.asList(new TopicPartition(args[1], 0), new TopicPartition("missing-topic", 0)));
            for (ElectionType type : new ElectionType[] {ElectionType.PREFERRED, ElectionType.UNCLEAN}) {
                Map<TopicPartition, Optional<Throwable>> results = admin.electLeaders(type, partitions).partitions().get();
                for (TopicPartition tp : partitions) {
                    Optional<Throwable> error = results.get(tp);
                    System.out.println("elect " + type + " " + tp + " "
                        + (error.isPresent() ? error.get().getClass().getSimpleName() : "ok"));
                }
            }
        }
    }
}
