// A replication client on pgjdbc (Debian's libpostgresql-jdbc-java), written the way
// pgjdbc's documentation shows its replication API, plus a plain connection doing what a
// Debezium connector does on connect (catalog reads over the extended query protocol).
//
//   java -cp CLASSES:/usr/share/java/postgresql.jar PgjdbcClient demo HOST PORT USER [--workload]
//     the demo: catalog reads, a publication and a slot, the stream of one transaction,
//     its feedback; one line per step on stdout, with nothing that differs between two
//     servers holding the same tables (no OIDs, LSNs, pids or version numbers).
//   java -cp … PgjdbcClient stream HOST PORT USER SLOT
//     a consumer for client conformance: streams SLOT (publication "pub"), prints
//     {"applied": "LSN"} after each Commit it processed, acknowledges it, reconnects a
//     second after any error.

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.PGResultSetMetaData;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;

public final class PgjdbcClient {
    private static String url(String host, String port) {
        return "jdbc:postgresql://" + host + ":" + port + "/postgres";
    }

    private static Connection plain(String host, String port, String user) throws SQLException {
        Properties props = new Properties();
        PGProperty.USER.set(props, user);
        // Named server-side statements from the first execution, as a long-running
        // connector's statements become after prepareThreshold uses.
        PGProperty.PREPARE_THRESHOLD.set(props, 1);
        return DriverManager.getConnection(url(host, port), props);
    }

    private static Connection replication(String host, String port, String user) throws SQLException {
        // pgjdbc's replication documentation: replication=database, simple query mode
        // (a walsender answers the simple query protocol only).
        Properties props = new Properties();
        PGProperty.USER.set(props, user);
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(props, "9.4");
        PGProperty.REPLICATION.set(props, "database");
        PGProperty.PREFER_QUERY_MODE.set(props, "simple");
        return DriverManager.getConnection(url(host, port), props);
    }

    /** The columns and the number of rows (values that differ between servers: LSNs). */
    private static void shape(Connection c, String label, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            StringBuilder head = new StringBuilder(label).append(" columns:");
            for (int i = 1; i <= md.getColumnCount(); i++) {
                head.append(' ').append(md.getColumnLabel(i)).append('/').append(md.getColumnTypeName(i));
            }
            int n = 0;
            while (rs.next()) {
                n++;
            }
            System.out.println(head + " rows: " + n);
        }
    }

    private static void rows(String label, ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        StringBuilder head = new StringBuilder(label).append(" columns:");
        for (int i = 1; i <= md.getColumnCount(); i++) {
            head.append(' ').append(md.getColumnLabel(i)).append('/').append(md.getColumnTypeName(i));
        }
        System.out.println(head);
        while (rs.next()) {
            StringBuilder row = new StringBuilder(label).append(" row:");
            for (int i = 1; i <= md.getColumnCount(); i++) {
                row.append(' ').append(rs.getString(i));
            }
            System.out.println(row);
        }
    }

    /** Where each column comes from, as ResultSetMetaData tells it (pgjdbc looks the
     *  relation and the column up by RowDescription's table OID and column number). */
    private static void metadata(Connection c, String label, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            PGResultSetMetaData pg = md.unwrap(PGResultSetMetaData.class);
            for (int i = 1; i <= md.getColumnCount(); i++) {
                System.out.println(label + " column " + md.getColumnLabel(i) + ": table " + md.getTableName(i)
                        + " schema " + pg.getBaseSchemaName(i) + " column " + pg.getBaseColumnName(i)
                        + " nullable " + md.isNullable(i) + " auto-increment " + md.isAutoIncrement(i)
                        + " type " + md.getColumnTypeName(i));
            }
        }
    }

    private static void query(Connection c, String label, String sql, Object... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rows(label, rs);
            }
        }
    }

    /** What a Debezium connector reads on connect, over the extended query protocol. */
    private static void catalog(Connection c, String slot) throws SQLException {
        query(c, "version-known", "SELECT current_setting('server_version_num')::int >= 100000 AS ok");
        query(c, "wal-level", "SHOW wal_level");
        query(c, "slot-before", "SELECT slot_name, plugin, slot_type, active FROM pg_replication_slots "
                + "WHERE slot_name = ? AND database = ? AND plugin = ?", slot, "postgres", "pgoutput");
        query(c, "publications", "SELECT COUNT(1) FROM pg_publication WHERE pubname = ?", "jdbc_pub");
        // Debezium's PostgresConnection: the WAL position, the role's privileges, its
        // TypeRegistry's type query (here for three types)
        shape(c, "wal-position", "select * from pg_current_wal_lsn()");
        query(c, "privileges", "SELECT r.rolcanlogin AS rolcanlogin, r.rolreplication AS rolreplication, "
                + "CAST(array_position(ARRAY(SELECT b.rolname FROM pg_catalog.pg_auth_members m JOIN "
                + "pg_catalog.pg_roles b ON (m.roleid = b.oid) WHERE m.member = r.oid), 'rds_superuser') AS BOOL) "
                + "IS TRUE AS aws_superuser FROM pg_roles r WHERE r.rolname = current_user");
        query(c, "type-registry", "SELECT t.oid AS oid, t.typname AS name, t.typelem AS element, "
                + "t.typbasetype AS parentoid, t.typtypmod as modifiers, t.typcategory as category, "
                + "e.values as enum_values FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n "
                + "ON (t.typnamespace = n.oid) LEFT JOIN (SELECT t.enumtypid as id, array_agg(t.enumlabel "
                + "ORDER BY t.enumsortorder) as values FROM pg_catalog.pg_enum t GROUP BY id) e ON (t.oid = e.id) "
                + "WHERE n.nspname != 'pg_toast' AND t.oid IN (23, 1043, 1700) ORDER BY t.oid");
        query(c, "type-by-oid", "SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname "
                + "FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid "
                + "WHERE t.oid = ?", 1700);
        query(c, "type-by-name", "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, "
                + "pg_type.oid FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r "
                + "from pg_namespace as ns join ( select s.r, (current_schemas(false))[s.r] as nspname "
                + "from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r using ( nspname ) "
                + ") as sp ON sp.nspoid = typnamespace WHERE typname = ? ORDER BY sp.r, pg_type.oid DESC LIMIT 1",
                "int4");
        query(c, "columns", "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
                + "WHERE a.attrelid = ?::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                "public.accounts");
        query(c, "binary-params", "SELECT ?::int4 + 1 AS n, ?::int8 AS big, ?::bool AS flag, ?::text AS t",
                41, 7L, Boolean.TRUE, null);
        // A cursor-style read: fetch size 2 without autocommit runs Execute with a row limit.
        c.setAutoCommit(false);
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT t.typname FROM pg_catalog.pg_type t WHERE t.oid IN (16, 20, 23, 25, 1700) ORDER BY t.oid")) {
            ps.setFetchSize(2);
            try (ResultSet rs = ps.executeQuery()) {
                rows("fetch-size-2", rs);
            }
        }
        c.commit();
        c.setAutoCommit(true);
        try (Statement st = c.createStatement()) {
            st.executeQuery("SELECT no_such_column FROM pg_catalog.pg_class");
            System.out.println("bad-query: no error");
        } catch (SQLException e) {
            System.out.println("bad-query: " + e.getSQLState());
        }
        query(c, "after-error", "SELECT ? AS still_working", "yes");
        metadata(c, "origins", "SELECT a.id, a.name AS who, a.id + 1 AS more, c.relname, s.slot_name "
                + "FROM public.accounts a, pg_catalog.pg_class c, pg_replication_slots s WHERE false");
    }

    private static String lsn(LogSequenceNumber l) {
        return l.asString();
    }

    private static void demo(String host, String port, String user, boolean workload) throws Exception {
        String slot = "jdbc_slot";
        try (Connection c = plain(host, port, user)) {
            catalog(c, slot);
            try (Statement st = c.createStatement()) {
                st.execute("CREATE PUBLICATION jdbc_pub FOR TABLE public.accounts");
            }
            try (Connection r = replication(host, port, user)) {
                PGConnection pg = r.unwrap(PGConnection.class);
                pg.getReplicationAPI().createReplicationSlot().logical().withSlotName(slot)
                        .withOutputPlugin("pgoutput").make();
                System.out.println("slot created");
                query(c, "slot-after", "SELECT slot_name, plugin, slot_type FROM pg_replication_slots "
                        + "WHERE slot_name = ? AND database = ? AND plugin = ?", slot, "postgres", "pgoutput");
                if (workload) {
                    // One transaction, as the fake's scenario holds it.
                    c.setAutoCommit(false);
                    try (Statement st = c.createStatement()) {
                        st.execute("INSERT INTO public.accounts VALUES (2, 'bob', 3.00)");
                        st.execute("UPDATE public.accounts SET name = 'robert' WHERE id = 2");
                        st.execute("DELETE FROM public.accounts WHERE id = 2");
                    }
                    c.commit();
                    c.setAutoCommit(true);
                }
                PGReplicationStream stream = pg.getReplicationAPI().replicationStream().logical()
                        .withSlotName(slot).withSlotOption("proto_version", "1")
                        .withSlotOption("publication_names", "jdbc_pub")
                        .withStatusInterval(1, TimeUnit.SECONDS).start();
                long deadline = System.currentTimeMillis() + 30000;
                LogSequenceNumber commitEnd = null;
                while (commitEnd == null && System.currentTimeMillis() < deadline) {
                    ByteBuffer msg = stream.readPending();
                    if (msg == null) {
                        TimeUnit.MILLISECONDS.sleep(10);
                        continue;
                    }
                    byte[] b = new byte[msg.remaining()];
                    msg.get(b);
                    char kind = (char) b[0];
                    String extra = "";
                    if (kind == 'R') {
                        // Relation: Int32 id, then namespace and name, NUL-terminated
                        int at = 5;
                        int end = at;
                        while (b[end] != 0) end++;
                        String ns = new String(b, at, end - at, StandardCharsets.UTF_8);
                        int at2 = end + 1;
                        int end2 = at2;
                        while (b[end2] != 0) end2++;
                        extra = " " + ns + "." + new String(b, at2, end2 - at2, StandardCharsets.UTF_8);
                    }
                    System.out.println("message " + kind + extra);
                    if (kind == 'C') {
                        commitEnd = LogSequenceNumber.valueOf(ByteBuffer.wrap(b, 10, 8).getLong());
                    }
                    stream.setAppliedLSN(stream.getLastReceiveLSN());
                    stream.setFlushedLSN(stream.getLastReceiveLSN());
                }
                if (commitEnd == null) {
                    System.out.println("no Commit within 30 s");
                    System.exit(1);
                }
                stream.setAppliedLSN(commitEnd);
                stream.setFlushedLSN(commitEnd);
                stream.forceUpdateStatus();
                // The server takes the flushed position as the slot's confirmed_flush_lsn.
                boolean confirmed = false;
                for (int i = 0; i < 100 && !confirmed; i++) {
                    try (PreparedStatement ps = c.prepareStatement("SELECT confirmed_flush_lsn >= ?::pg_lsn "
                            + "FROM pg_replication_slots WHERE slot_name = ?")) {
                        ps.setString(1, lsn(commitEnd));
                        ps.setString(2, slot);
                        try (ResultSet rs = ps.executeQuery()) {
                            confirmed = rs.next() && rs.getBoolean(1);
                        }
                    }
                    if (!confirmed) {
                        stream.forceUpdateStatus();
                        TimeUnit.MILLISECONDS.sleep(50);
                    }
                }
                System.out.println("confirmed_flush_lsn reached the commit: " + confirmed);
                stream.close();
                pg.getReplicationAPI().dropReplicationSlot(slot);
                System.out.println("slot dropped");
            }
            try (Statement st = c.createStatement()) {
                st.execute("DROP PUBLICATION jdbc_pub");
            }
        }
    }

    private static void stream(String host, String port, String user, String slot) throws Exception {
        while (true) {
            try (Connection r = replication(host, port, user)) {
                PGConnection pg = r.unwrap(PGConnection.class);
                PGReplicationStream stream = pg.getReplicationAPI().replicationStream().logical()
                        .withSlotName(slot).withSlotOption("proto_version", "1")
                        .withSlotOption("publication_names", "pub")
                        .withStatusInterval(1, TimeUnit.SECONDS).start();
                while (true) {
                    ByteBuffer msg = stream.readPending();
                    if (msg == null) {
                        TimeUnit.MILLISECONDS.sleep(10);
                        continue;
                    }
                    if (msg.get(msg.position()) == 'C') {
                        LogSequenceNumber end = LogSequenceNumber.valueOf(msg.getLong(msg.position() + 10));
                        System.out.println("{\"applied\": \"" + lsn(end) + "\"}");
                        System.out.flush();
                        stream.setAppliedLSN(end);
                        stream.setFlushedLSN(end);
                        stream.forceUpdateStatus();
                    }
                }
            } catch (SQLException e) {
                System.err.println("error: " + e.getMessage());
                TimeUnit.SECONDS.sleep(1);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 4 && args[0].equals("demo")) {
            demo(args[1], args[2], args[3], args.length > 4 && args[4].equals("--workload"));
        } else if (args.length == 5 && args[0].equals("stream")) {
            stream(args[1], args[2], args[3], args[4]);
        } else {
            System.err.println("usage: PgjdbcClient demo HOST PORT USER [--workload] | stream HOST PORT USER SLOT");
            System.exit(2);
        }
    }
}
