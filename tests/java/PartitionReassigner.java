// Kafka's own Admin client reassigns partitions of `topic` (3 partitions, one broker `node`):
// partition 0 to [node] (where it is), partition 1 to [node, node + 1] (no such broker),
// partition 2 cancelled (nothing in progress), and partition 0 of a topic that does not exist.
// Then it lists the reassignments in progress, all and for `topic`. Prints:
//   alter <topic>-<partition> <ok | exception class simple name>: <message>
//   list <all | topic> <count>
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.*;

public class PartitionReassigner {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("default.api.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        String topic = args[1];
        int node = Integer.parseInt(args[2]);
        try (Admin admin = Admin.create(p)) {
            Map<TopicPartition, Optional<NewPartitionReassignment>> targets = new LinkedHashMap<>();
            targets.put(new TopicPartition(topic, 0), Optional.of(new NewPartitionReassignment(List.of(node))));
            targets.put(new TopicPartition(topic, 1), Optional.of(new NewPartitionReassignment(List.of(node, node + 1))));
            targets.put(new TopicPartition(topic, 2), Optional.empty());
            targets.put(new TopicPartition("missing-topic", 0), Optional.of(new NewPartitionReassignment(List.of(node))));
            Map<TopicPartition, KafkaFuture<Void>> results = admin.alterPartitionReassignments(targets).values();
            for (TopicPartition tp : targets.keySet()) {
                String outcome;
                try {
                    results.get(tp).get();
                    outcome = "ok";
                } catch (java.util.concurrent.ExecutionException e) {
                    outcome = e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
                }
                System.out.println("alter " + tp + " " + outcome);
            }
            System.out.println("list all " + admin.listPartitionReassignments().reassignments().get().size());
            Set<TopicPartition> mine = Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            System.out.println("list topic " + admin.listPartitionReassignments(mine).reassignments().get().size());
        }
    }
}
