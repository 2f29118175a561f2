// Kafka's own Admin client creates a topic through one broker: createTopics with a partition
// count, a replication factor and topic configs, then describeTopics. Prints:
//   created <topic> <partitions> <replication factor>   (or: error <exception class simple name>)
//   partition <index> leader <id> replicas <ids, comma-separated>
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.*;

public class TopicCreator {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("default.api.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        String topic = args[1];
        NewTopic newTopic = new NewTopic(topic, Integer.parseInt(args[2]), Short.parseShort(args[3]));
        Map<String, String> configs = new HashMap<>();
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            configs.put(kv[0], kv[1]);
        }
        newTopic.configs(configs);
        try (Admin admin = Admin.create(p)) {
            CreateTopicsResult created = admin.createTopics(Collections.singleton(newTopic));
            try {
                created.all().get();
            } catch (java.util.concurrent.ExecutionException e) {
                System.out.println("error " + e.getCause().getClass().getSimpleName());
                return;
            }
            System.out.println("created " + topic + " " + created.numPartitions(topic).get() + " "
                + created.replicationFactor(topic).get());
            TopicDescription description = null;
            for (int attempt = 0; attempt < 100; attempt++) {  // until every broker knows the topic
                try {
                    description = admin.describeTopics(Collections.singleton(topic)).allTopicNames().get().get(topic);
                    break;
                } catch (java.util.concurrent.ExecutionException e) {
                    Thread.sleep(100);
                }
            }
            for (TopicPartitionInfo partition : description.partitions()) {
                StringJoiner ids = new StringJoiner(",");
                for (Node node : partition.replicas()) ids.add(Integer.toString(node.id()));
                System.out.println("partition " + partition.partition() + " leader " + partition.leader().id()
                    + " replicas " + ids);
            }
        }
    }
}
