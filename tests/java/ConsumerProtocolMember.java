// One member of a group using the KIP-848 consumer protocol (group.protocol=consumer), as Kafka's
// Java client 3.9 runs it. Polls until a line "stop" (or end of input) arrives on stdin.
// Prints, as they happen:
//   "assigned <p,p,...>"   whenever its assignment changes ("assigned -" when empty);
//   "read <p> <offset>"    for every record;
//   "commit ok" / "commit failed <error>" after each commitSync of a non-empty poll;
// and at the end "committed <p>=<offset> ..." for partitions 0..n-1 as committed() sees them,
// then "closed" once close() (which leaves the group, member epoch -1) has returned.
// Arguments: bootstrap topic group partitions [server assignor or -] [group.instance.id]
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

public class ConsumerProtocolMember {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int partitions = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", "consumer");
        if (args.length > 4 && !args[4].equals("-")) p.put("group.remote.assignor", args[4]);
        if (args.length > 5) p.put("group.instance.id", args[5]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("fetch.max.wait.ms", "100");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        AtomicBoolean stop = new AtomicBoolean();
        Thread input = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) { }
            } catch (Exception e) { }
            stop.set(true);
        });
        input.setDaemon(true);
        input.start();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic));
            String last = null;
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> r : records) say("read " + r.partition() + " " + r.offset());
                if (!records.isEmpty()) {
                    try { c.commitSync(); say("commit ok"); }
                    catch (Exception e) { say("commit failed " + e); }
                }
                List<Integer> owned = new ArrayList<>();
                for (TopicPartition tp : c.assignment()) owned.add(tp.partition());
                Collections.sort(owned);
                StringBuilder now = new StringBuilder();
                for (int q : owned) now.append(now.length() == 0 ? "" : ",").append(q);
                String text = now.length() == 0 ? "-" : now.toString();
                if (!text.equals(last)) { say("assigned " + text); last = text; }
            }
            Set<TopicPartition> all = new HashSet<>();
            for (int q = 0; q < partitions; q++) all.add(new TopicPartition(topic, q));
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(all, Duration.ofSeconds(10));
            StringBuilder sb = new StringBuilder("committed");
            for (int q = 0; q < partitions; q++) {
                OffsetAndMetadata om = committed.get(new TopicPartition(topic, q));
                sb.append(" ").append(q).append("=").append(om == null ? -1 : om.offset());
            }
            say(sb.toString());
        }
        say("closed");
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
