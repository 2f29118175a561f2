// Kafka's Java KafkaConsumer reading several partitions through three assignments while a
// KafkaProducer in the same program writes to every partition, so that the consumer's fetches run
// in an incremental fetch session (KIP-227) that gains and loses partitions. Arguments:
// bootstrap, topic, rounds per phase. For each phase (partitions 0-3, then 0-1, then 0-5) it
// produces `rounds` records to each partition of the topic (six), reads until it has the records
// of the assigned ones, and prints "phase <n> <partition> <offset> <value>" per record read.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public class SessionConsumer {
    static int rounds;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        rounds = Integer.parseInt(args[2]);
        int[][] phases = {{0, 1, 2, 3}, {0, 1}, {0, 1, 2, 3, 4, 5}};
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("enable.auto.commit", "false");
        cp.put("fetch.max.wait.ms", "100");
        cp.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        cp.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        pp.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
            Map<Integer, Long> next = new HashMap<>();
            for (int phase = 0; phase < phases.length; phase++) {
                List<TopicPartition> assigned = new ArrayList<>();
                for (int partition : phases[phase]) {
                    assigned.add(new TopicPartition(topic, partition));
                }
                c.assign(assigned);
                for (TopicPartition tp : assigned) {  // continue where we were, or from the start
                    c.seek(tp, next.getOrDefault(tp.partition(), 0L));
                }
                for (int round = 0; round < rounds; round++) {
                    for (int partition = 0; partition < 6; partition++) {
                        String value = "p" + phase + "-r" + round + "-" + partition;
                        p.send(new ProducerRecord<>(topic, partition, null, value.getBytes(StandardCharsets.UTF_8))).get();
                    }
                    // Read this round before the next: many fetches, most of them for few partitions.
                    readUntil(c, phase, assigned, next, round + 1);
                }
            }
        }
    }

    // Poll until every assigned partition has `produced` records of this phase read, up to 20 s.
    static void readUntil(KafkaConsumer<byte[], byte[]> c, int phase, List<TopicPartition> assigned,
                          Map<Integer, Long> next, int produced) {
        long deadline = System.currentTimeMillis() + 20_000;
        while (System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(50))) {
                String value = new String(r.value(), StandardCharsets.UTF_8);
                System.out.println("phase " + phase + " " + r.partition() + " " + r.offset() + " " + value);
                next.put(r.partition(), r.offset() + 1);
            }
            boolean done = true;
            for (TopicPartition tp : assigned) {
                done &= c.position(tp) >= (long) phase * rounds + produced;  // every phase wrote to it
            }
            if (done) return;
        }
        throw new IllegalStateException("phase " + phase + ": records missing after 20 s");
    }
}
