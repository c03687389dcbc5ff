// conform driver for grpc-java, from Debian's libgrpc-java with grpc-netty.
//
// Speaks the conform driver protocol, version 1 (harness/driver/PROTOCOL.md):
// JSON commands on stdin, one per line; replies and events on stdout, one per
// line; diagnostics on stderr. conform compiles it at first use against the
// jars the Debian packages install (harness/driver/java.go) and runs it with
// those jars on the class path.
//
// What grpc-java expresses, and how:
// - conform:/// targets: a NameResolverProvider for the scheme "conform",
//   registered in the default NameResolverRegistry, whose resolver hands the
//   channel one EquivalentAddressGroup per endpoint from `resolve` commands
//   and reports every refresh() (the channel asking to re-resolve) as a
//   resolve-now event.
// - The LB config comes from the scenario's service config, given to the
//   channel as its default service config, with service config look-up off.
// - Channel states come from ManagedChannel.notifyWhenStateChanged with the
//   channel's executor set to a direct executor: the callback then runs
//   inside the channel's state change, so it sees every transition
//   ("observes": "every-change").
// - RPCs are unary calls with a byte-array marshaller (the lab backends'
//   /conform.lab.Backend/Name takes and returns raw bytes).
// - From the first channel on, a daemon thread watches the process for
//   stalls (PROTOCOL.md, "Stalls": 2 ms sleeps, a wake-up 4 ms late or more
//   is a stall event). hello does not claim stall_watch: grpc-java's timers
//   run on Netty's event loops and its own timer thread, which the OS
//   schedules apart from the watch's, and how closely the watch follows
//   them has not been measured.
// - Before hello, when conform asks for it (CONFORM_JAVA_WARM_UP=1, set
//   only for a driver it starts in the lab), one call over loopback (a grpc-netty server and channel of
//   the driver's own, on 127.0.0.1 in the client's namespace, never a lab
//   address) loads and initializes the JVM classes of a connection: without
//   it, the channel's first connection attempt came some 240 ms after the
//   first resolver update, all of it the JVM loading Netty and grpc-java's
//   transport, which a scenario would read as the client's delay.
import com.google.common.util.concurrent.MoreExecutors;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.reflect.TypeToken;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.internal.GrpcUtil;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Type;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public final class Driver {
  static final int PROTOCOL = 1;
  static final String SCHEME = "conform";
  static final String BACKEND_HEADER = "x-conform-backend";
  static final long CLOSE_WAIT_MS = 2000; // how long close waits for cancelled RPCs to report

  // ---- output: one JSON object per line, from any thread ----------------

  private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();
  private static final Object OUT_LOCK = new Object();
  private static PrintStream out;

  static void emit(JsonObject obj) {
    String line = GSON.toJson(obj);
    synchronized (OUT_LOCK) {
      out.print(line);
      out.print('\n');
      out.flush();
    }
  }

  static JsonObject event(String ev) {
    JsonObject o = new JsonObject();
    o.addProperty("ev", ev);
    return o;
  }

  static void log(String line) {
    JsonObject o = event("log");
    o.addProperty("line", line);
    emit(o);
  }

  /** A command that cannot be carried out: an error reply. */
  static final class CommandError extends Exception {
    private static final long serialVersionUID = 1L;

    CommandError(String msg) {
      super(msg);
    }
  }

  // ---- the conform resolver ----------------------------------------------

  /**
   * Hands the channel the addresses of the latest resolve command. One per
   * channel; a resolver the channel starts again (after idleness) gets the
   * latest update at once.
   */
  static final class ConformResolver extends NameResolver {
    private final String authority;
    private Listener2 listener; // guarded by this
    private List<EquivalentAddressGroup> latest; // guarded by this

    ConformResolver(String authority) {
      this.authority = authority;
    }

    @Override
    public String getServiceAuthority() {
      return authority;
    }

    @Override
    public void start(Listener2 l) {
      List<EquivalentAddressGroup> update;
      synchronized (this) {
        listener = l;
        update = latest;
      }
      if (update != null) {
        deliver(l, update);
      }
    }

    @Override
    public void refresh() {
      emit(event("resolve-now"));
    }

    @Override
    public void shutdown() {
      synchronized (this) {
        listener = null;
      }
    }

    void update(List<EquivalentAddressGroup> eags) {
      Listener2 l;
      synchronized (this) {
        latest = eags;
        l = listener;
      }
      if (l != null) {
        deliver(l, eags);
      }
    }

    private static void deliver(Listener2 l, List<EquivalentAddressGroup> eags) {
      // onResult hands the update to the channel's synchronization context.
      l.onResult(ResolutionResult.newBuilder().setAddresses(eags).build());
    }
  }

  /** Serves conform:/// targets with the driver's one resolver. */
  static final class ConformResolverProvider extends NameResolverProvider {
    private final Driver driver;

    ConformResolverProvider(Driver driver) {
      this.driver = driver;
    }

    @Override
    protected boolean isAvailable() {
      return true;
    }

    @Override
    protected int priority() {
      return 5;
    }

    @Override
    public String getDefaultScheme() {
      return SCHEME;
    }

    @Override
    public NameResolver newNameResolver(URI target, NameResolver.Args args) {
      if (!SCHEME.equals(target.getScheme())) {
        return null;
      }
      return driver.resolverFor(target);
    }
  }

  // ---- raw bytes ------------------------------------------------------------

  static final class RawMarshaller implements MethodDescriptor.Marshaller<byte[]> {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw Status.INTERNAL.withDescription("reading the response: " + e).asRuntimeException();
      }
    }
  }

  static final RawMarshaller RAW = new RawMarshaller();
  static final Metadata.Key<String> BACKEND_KEY =
      Metadata.Key.of(BACKEND_HEADER, Metadata.ASCII_STRING_MARSHALLER);

  // ---- the driver: one channel and its RPCs ------------------------------

  private ManagedChannel channel;
  private ConformResolver resolver; // the resolver of a conform:/// channel
  private String resolverTarget;
  private int pending; // RPCs started whose result is not written yet; guarded by this

  synchronized ConformResolver resolverFor(URI target) {
    if (resolver == null) {
      String path = target.getPath() == null ? "" : target.getPath().replaceFirst("^/", "");
      resolver = new ConformResolver(path.isEmpty() ? SCHEME : path);
      resolverTarget = target.toString();
    } else if (!target.toString().equals(resolverTarget)) {
      throw new IllegalArgumentException("one conform:/// target per driver, have " + resolverTarget);
    }
    return resolver;
  }

  JsonObject hello() {
    JsonObject can = new JsonObject();
    // Several addresses per EquivalentAddressGroup; each group is an endpoint.
    can.addProperty("endpoints", true);
    can.addProperty("mixed_families", true);
    can.addProperty("service_config", true);
    // grpc-java took shuffleAddressList (A62) in 1.56; before, pick_first has no config.
    can.addProperty("shuffle", atLeast(1, 56));
    can.addProperty("wait_for_ready", true);
    // Debian packages neither grpc-xds nor grpc-services (client-side
    // health checking), and conform's class path has only what it packages.
    can.addProperty("xds", false);
    can.addProperty("health_check", false);
    can.addProperty("connection_attempt_delay", false);
    JsonObject h = new JsonObject();
    h.addProperty("protocol", PROTOCOL);
    h.addProperty("impl", "grpc-java");
    h.addProperty("version", version());
    h.add("can", can);
    h.add("policies", GSON.toJsonTree(policies()));
    h.addProperty("observes", "every-change");
    JsonObject r = new JsonObject();
    r.add("hello", h);
    return r;
  }

  static String version() {
    return GrpcUtil.getGrpcBuildVersion().getImplementationVersion();
  }

  static boolean atLeast(int major, int minor) {
    String[] p = version().split("[.-]");
    try {
      int ma = Integer.parseInt(p[0]);
      int mi = Integer.parseInt(p[1]);
      return ma > major || (ma == major && mi >= minor);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** The LB policies the default registry serves, by name. */
  static List<String> policies() {
    TreeSet<String> names = new TreeSet<>();
    LoadBalancerRegistry reg = LoadBalancerRegistry.getDefaultRegistry();
    for (LoadBalancerProvider p : ServiceLoader.load(LoadBalancerProvider.class)) {
      names.add(p.getPolicyName());
    }
    names.add("pick_first"); // built in, whatever the class path's service files say
    List<String> out = new ArrayList<>();
    for (String n : names) {
      if (reg.getProvider(n) != null) {
        out.add(n);
      }
    }
    return out;
  }

  JsonObject create(JsonObject cmd) throws CommandError {
    if (channel != null) {
      throw new CommandError("a channel exists already (one per driver)");
    }
    String target = str(cmd, "target", null);
    if (target.isEmpty()) {
      throw new CommandError("create: empty target");
    }
    if (target.startsWith("xds:")) {
      throw new CommandError("create: " + target + ": this grpc-java has no xDS module (Debian packages none)");
    }
    String sc = str(cmd, "service_config", "");
    NettyChannelBuilder b = NettyChannelBuilder.forTarget(target)
        .usePlaintext()
        .executor(MoreExecutors.directExecutor()) // state callbacks inside each change
        .disableServiceConfigLookUp();
    if (!sc.isEmpty()) {
      b.defaultServiceConfig(serviceConfig(sc));
    }
    try {
      channel = b.build();
    } catch (RuntimeException e) {
      throw new CommandError("create: " + target + ": " + e.getMessage());
    }
    watchStalls();
    // The first report is the state right after create; asking for it with
    // requestConnection leaves IDLE at once.
    watch(channel.getState(true));
    System.err.println("driver: channel created: target=" + target + " service_config=" + (sc.isEmpty() ? "(none)" : sc));
    return new JsonObject();
  }

  /** Reports state and the changes after it, for as long as the channel lives. */
  private void watch(ConnectivityState state) {
    JsonObject o = event("channel-state");
    o.addProperty("state", state.name());
    emit(o);
    if (state == ConnectivityState.SHUTDOWN) {
      return;
    }
    ManagedChannel ch = channel;
    ch.notifyWhenStateChanged(state, () -> watch(ch.getState(false)));
  }

  static Map<String, ?> serviceConfig(String text) throws CommandError {
    JsonElement e;
    try {
      e = JsonParser.parseString(text);
    } catch (RuntimeException ex) {
      throw new CommandError("create: service_config is not JSON: " + ex.getMessage());
    }
    if (!e.isJsonObject()) {
      throw new CommandError("create: service_config is not a JSON object");
    }
    // grpc-java's service config is JSON as maps, lists, strings, Doubles and Booleans.
    Type t = new TypeToken<Map<String, Object>>() {}.getType();
    return GSON.fromJson(e, t);
  }

  JsonObject resolve(JsonObject cmd) throws CommandError {
    ConformResolver r;
    synchronized (this) {
      r = resolver;
    }
    if (channel == null) {
      throw new CommandError("resolve: no channel (create first)");
    }
    if (r == null) {
      throw new CommandError("resolve: the channel's target is not conform:///");
    }
    if (cmd.has("attributes")) {
      throw new CommandError("resolve: this driver has no endpoint attributes");
    }
    JsonElement eps = cmd.get("endpoints");
    if (eps == null || !eps.isJsonArray()) {
      throw new CommandError("resolve: field \"endpoints\" must be a list of lists of ip:port");
    }
    List<EquivalentAddressGroup> eags = new ArrayList<>();
    for (JsonElement ep : eps.getAsJsonArray()) {
      if (!ep.isJsonArray() || ep.getAsJsonArray().size() == 0) {
        throw new CommandError("resolve: an endpoint is a non-empty list of ip:port, not " + ep);
      }
      List<SocketAddress> addrs = new ArrayList<>();
      for (JsonElement a : ep.getAsJsonArray()) {
        if (!a.isJsonPrimitive() || !a.getAsJsonPrimitive().isString()) {
          throw new CommandError("resolve: an address is a string ip:port, not " + a);
        }
        addrs.add(socketAddress(a.getAsString()));
      }
      eags.add(new EquivalentAddressGroup(addrs));
    }
    r.update(Collections.unmodifiableList(eags));
    return new JsonObject();
  }

  /** Parses ip:port ([v6]:port); an IP literal, never a name to look up. */
  static InetSocketAddress socketAddress(String s) throws CommandError {
    int colon = s.lastIndexOf(':');
    if (colon <= 0) {
      throw new CommandError("resolve: " + s + " is not ip:port");
    }
    String host = s.substring(0, colon);
    boolean bracketed = host.startsWith("[") && host.endsWith("]");
    if (bracketed) {
      host = host.substring(1, host.length() - 1);
    }
    boolean v6 = host.contains(":");
    if (v6 != bracketed || !host.matches("[0-9A-Fa-f:.]+")) {
      throw new CommandError("resolve: " + s + " is not ip:port (IPv6 in brackets)");
    }
    try {
      int port = Integer.parseInt(s.substring(colon + 1));
      return new InetSocketAddress(InetAddress.getByName(host), port);
    } catch (NumberFormatException | IOException e) {
      throw new CommandError("resolve: " + s + " is not ip:port: " + e.getMessage());
    }
  }

  /** Starts one unary call; the reply comes before its result. */
  JsonObject rpc(JsonObject cmd) throws CommandError {
    if (channel == null) {
      throw new CommandError("rpc: no channel (create first)");
    }
    String id = str(cmd, "rpc", null);
    if (id.isEmpty()) {
      throw new CommandError("rpc: empty rpc id");
    }
    String method = str(cmd, "method", null);
    String fullName = method.startsWith("/") ? method.substring(1) : "";
    if (fullName.indexOf('/') <= 0 || fullName.endsWith("/")) {
      throw new CommandError("rpc: method \"" + method + "\" must be /service/method");
    }
    CallOptions opts = CallOptions.DEFAULT;
    if (bool(cmd, "wait_for_ready")) {
      opts = opts.withWaitForReady();
    }
    long deadline = number(cmd, "deadline_ms");
    if (deadline < 0) {
      throw new CommandError("rpc: deadline_ms must be a number >= 0");
    }
    if (deadline > 0) {
      opts = opts.withDeadlineAfter(deadline, TimeUnit.MILLISECONDS);
    }
    Metadata md = metadata(cmd);
    MethodDescriptor<byte[], byte[]> desc = MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(fullName)
        .setRequestMarshaller(RAW)
        .setResponseMarshaller(RAW)
        .build();
    ClientCall<byte[], byte[]> call = channel.newCall(desc, opts);
    synchronized (this) {
      pending++;
    }
    // The call starts after the reply is written (see line): a call that
    // fails at once reports its result after the ok.
    return startAfterReply(id, call, md);
  }

  private Runnable after;

  private JsonObject startAfterReply(String id, ClientCall<byte[], byte[]> call, Metadata md) {
    after = () -> {
      try {
        call.start(new Result(id), md);
        call.sendMessage(new byte[0]);
        call.halfClose();
        call.request(2);
      } catch (RuntimeException e) {
        call.cancel("starting the call failed", e);
      }
    };
    return new JsonObject();
  }

  static Metadata metadata(JsonObject cmd) throws CommandError {
    Metadata md = new Metadata();
    JsonElement m = cmd.get("metadata");
    if (m == null || m.isJsonNull()) {
      return md;
    }
    if (!m.isJsonObject()) {
      throw new CommandError("rpc: field \"metadata\" must be an object of strings");
    }
    for (Map.Entry<String, JsonElement> e : m.getAsJsonObject().entrySet()) {
      JsonElement v = e.getValue();
      if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isString()) {
        throw new CommandError("rpc: metadata \"" + e.getKey() + "\": value must be a string");
      }
      String key = e.getKey().toLowerCase();
      try {
        if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
          md.put(Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER), v.getAsString().getBytes(StandardCharsets.UTF_8));
        } else {
          md.put(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER), v.getAsString());
        }
      } catch (IllegalArgumentException ex) {
        throw new CommandError("rpc: metadata \"" + e.getKey() + "\": " + ex.getMessage());
      }
    }
    return md;
  }

  /** Writes one call's rpc-result. */
  final class Result extends ClientCall.Listener<byte[]> {
    private final String id;
    private volatile String backend;
    private volatile byte[] body;

    Result(String id) {
      this.id = id;
    }

    @Override
    public void onHeaders(Metadata headers) {
      backend = headers.get(BACKEND_KEY);
    }

    @Override
    public void onMessage(byte[] message) {
      body = message;
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      try {
        JsonObject o = event("rpc-result");
        o.addProperty("rpc", id);
        o.addProperty("code", status.getCode().name());
        if (status.isOk()) {
          String b = backend != null ? backend : trailers.get(BACKEND_KEY);
          if (b != null) {
            o.addProperty("backend", b);
          }
          if (b == null || body == null || !b.equals(new String(body, StandardCharsets.UTF_8))) {
            log("rpc " + id + ": body " + (body == null ? "none" : new String(body, StandardCharsets.UTF_8))
                + ", header " + BACKEND_HEADER + "=" + b);
          }
        } else {
          String msg = status.getDescription();
          if (status.getCause() != null) {
            msg = (msg == null ? "" : msg + ": ") + status.getCause();
          }
          o.addProperty("err", msg == null || msg.isEmpty() ? status.getCode().name() : msg);
        }
        emit(o);
      } finally {
        synchronized (Driver.this) {
          pending--;
          Driver.this.notifyAll();
        }
      }
    }
  }

  JsonObject close() {
    ManagedChannel ch = channel;
    if (ch == null) {
      return new JsonObject();
    }
    ch.shutdownNow(); // cancels calls in flight: they report
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
    synchronized (this) {
      while (pending > 0) {
        long left = until - System.nanoTime();
        if (left <= 0) {
          System.err.println("driver: " + pending + " RPCs did not report within " + CLOSE_WAIT_MS + " ms of close");
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(this, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    try {
      ch.awaitTermination(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return new JsonObject();
  }

  // ---- stall watch ----------------------------------------------------------------

  static final long STALL_STEP_NS = TimeUnit.MILLISECONDS.toNanos(2);
  static final long STALL_THRESHOLD_NS = TimeUnit.MILLISECONDS.toNanos(4);
  private static volatile boolean watching;

  /** Starts the stall watch, once. */
  static synchronized void watchStalls() {
    if (watching) {
      return;
    }
    watching = true;
    Thread t = new Thread(() -> {
      long before = System.nanoTime();
      while (true) {
        java.util.concurrent.locks.LockSupport.parkNanos(STALL_STEP_NS);
        long woke = System.nanoTime();
        long late = woke - before - STALL_STEP_NS;
        if (late >= STALL_THRESHOLD_NS) {
          emitStall(late, woke);
        }
        before = System.nanoTime();
      }
    }, "conform-stall-watch");
    t.setDaemon(true);
    t.setPriority(Thread.MAX_PRIORITY);
    t.start();
  }

  /** Writes a stall of late ns that ended at woke (nanoTime). */
  static void emitStall(long late, long woke) {
    JsonObject o = event("stall");
    o.addProperty("late_us", TimeUnit.NANOSECONDS.toMicros(late));
    synchronized (OUT_LOCK) {
      // Written after the wake-up by as long as the lock took.
      o.addProperty("ago_us", TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - woke));
      out.print(GSON.toJson(o));
      out.print('\n');
      out.flush();
    }
  }

  // ---- warm-up ------------------------------------------------------------------

  static final long WARM_UP_MS = 10_000;
  // conform sets it when it starts the driver in the lab's client namespace.
  static final String WARM_UP_ENV = "CONFORM_JAVA_WARM_UP";

  /**
   * Makes one call to a server of the driver's own over loopback, so that
   * the scenario's first connection does not wait for the JVM to load the
   * transport. Best effort: a failure is logged on stderr, nothing more.
   */
  static void warmUp() {
    long start = System.nanoTime();
    MethodDescriptor<byte[], byte[]> desc = MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName("conform.driver.WarmUp/Call")
        .setRequestMarshaller(RAW)
        .setResponseMarshaller(RAW)
        .build();
    ServerCallHandler<byte[], byte[]> answer = (call, headers) -> {
      call.request(1);
      return new ServerCall.Listener<byte[]>() {
        @Override
        public void onHalfClose() {
          call.sendHeaders(new Metadata());
          call.sendMessage(new byte[0]);
          call.close(Status.OK, new Metadata());
        }
      };
    };
    Server server = null;
    ManagedChannel ch = null;
    try {
      server = NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
          .addService(ServerServiceDefinition.builder("conform.driver.WarmUp").addMethod(desc, answer).build())
          .build()
          .start();
      ch = NettyChannelBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort()))
          .usePlaintext()
          .build();
      CountDownLatch done = new CountDownLatch(1);
      Status[] result = new Status[1];
      ClientCall<byte[], byte[]> call = ch.newCall(desc, CallOptions.DEFAULT.withDeadlineAfter(WARM_UP_MS, TimeUnit.MILLISECONDS));
      call.start(new ClientCall.Listener<byte[]>() {
        @Override
        public void onClose(Status status, Metadata trailers) {
          result[0] = status;
          done.countDown();
        }
      }, new Metadata());
      call.sendMessage(new byte[0]);
      call.halfClose();
      call.request(1);
      if (!done.await(WARM_UP_MS, TimeUnit.MILLISECONDS) || !result[0].isOk()) {
        System.err.println("driver: warm-up call did not succeed: " + result[0]);
      }
    } catch (Exception e) {
      System.err.println("driver: warm-up failed: " + e);
    } finally {
      if (ch != null) {
        ch.shutdownNow();
      }
      if (server != null) {
        server.shutdownNow();
      }
    }
    System.err.println("driver: warm-up took " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms");
  }

  // ---- command fields ---------------------------------------------------------

  static String str(JsonObject cmd, String name, String dflt) throws CommandError {
    JsonElement v = cmd.get(name);
    if (v == null || v.isJsonNull()) {
      if (dflt == null) {
        throw new CommandError(op(cmd) + ": missing field \"" + name + "\"");
      }
      return dflt;
    }
    if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isString()) {
      throw new CommandError(op(cmd) + ": field \"" + name + "\" has the wrong type (want a string)");
    }
    return v.getAsString();
  }

  static boolean bool(JsonObject cmd, String name) throws CommandError {
    JsonElement v = cmd.get(name);
    if (v == null || v.isJsonNull()) {
      return false;
    }
    if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isBoolean()) {
      throw new CommandError(op(cmd) + ": field \"" + name + "\" has the wrong type (want true or false)");
    }
    return v.getAsBoolean();
  }

  static long number(JsonObject cmd, String name) throws CommandError {
    JsonElement v = cmd.get(name);
    if (v == null || v.isJsonNull()) {
      return 0;
    }
    if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isNumber()) {
      throw new CommandError(op(cmd) + ": field \"" + name + "\" has the wrong type (want a number)");
    }
    return v.getAsLong();
  }

  static String op(JsonObject cmd) {
    JsonElement v = cmd.get("op");
    return v != null && v.isJsonPrimitive() ? v.getAsString() : "command";
  }

  // ---- the protocol loop ----------------------------------------------------

  JsonObject handle(String op, JsonObject cmd) throws CommandError {
    switch (op) {
      case "hello":
        return hello();
      case "create":
        return create(cmd);
      case "resolve":
        return resolve(cmd);
      case "rpc":
        return rpc(cmd);
      case "close":
        return close();
      default:
        throw new CommandError("unknown op \"" + op + "\"");
    }
  }

  /** Handles one line; returns false after a successful close. */
  boolean line(String raw) {
    if (raw.trim().isEmpty()) {
      return true;
    }
    JsonElement parsed;
    try {
      parsed = JsonParser.parseString(raw);
    } catch (RuntimeException e) {
      error(null, "malformed command line (" + e.getMessage() + "): " + abbreviate(raw));
      return true;
    }
    if (!parsed.isJsonObject()) {
      error(null, "a command is a JSON object, not " + abbreviate(raw));
      return true;
    }
    JsonObject cmd = parsed.getAsJsonObject();
    JsonElement id = cmd.get("id");
    if (id == null || id.isJsonNull()) {
      error(null, "command without an id");
      return true;
    }
    JsonElement opEl = cmd.get("op");
    String op = opEl != null && opEl.isJsonPrimitive() && opEl.getAsJsonPrimitive().isString() ? opEl.getAsString() : null;
    after = null;
    JsonObject reply;
    try {
      if (op == null) {
        throw new CommandError("command without an op");
      }
      JsonObject result = handle(op, cmd);
      reply = new JsonObject();
      reply.add("id", id);
      reply.addProperty("ev", "ok");
      for (Map.Entry<String, JsonElement> e : result.entrySet()) {
        reply.add(e.getKey(), e.getValue());
      }
    } catch (CommandError e) {
      error(id, e.getMessage());
      return true;
    } catch (RuntimeException e) {
      e.printStackTrace();
      error(id, op + ": " + e);
      return true;
    }
    emit(reply);
    if (after != null) {
      Runnable r = after;
      after = null;
      r.run();
    }
    return !"close".equals(op);
  }

  static void error(JsonElement id, String msg) {
    JsonObject o = new JsonObject();
    if (id != null) {
      o.add("id", id);
    }
    o.addProperty("ev", "error");
    o.addProperty("err", msg == null || msg.isEmpty() ? "error" : msg);
    emit(o);
  }

  static String abbreviate(String s) {
    return s.length() > 200 ? s.substring(0, 200) + "…" : s;
  }

  public static void main(String[] args) throws IOException {
    // Protocol lines go to the real stdout; System.out is stderr from now
    // on, so nothing else (a library, a stray print) can write to the
    // protocol stream.
    out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    System.setOut(System.err);
    if ("1".equals(System.getenv(WARM_UP_ENV))) {
      warmUp();
    }
    Driver d = new Driver();
    NameResolverRegistry.getDefaultRegistry().register(new ConformResolverProvider(d));
    InputStream in = new java.io.BufferedInputStream(System.in);
    java.io.ByteArrayOutputStream buf = new java.io.ByteArrayOutputStream();
    for (int c = in.read(); c >= 0 || buf.size() > 0; c = in.read()) {
      if (c >= 0 && c != '\n') {
        buf.write(c);
        continue;
      }
      byte[] raw = buf.toByteArray();
      buf.reset();
      String text;
      try {
        text = StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(raw)).toString();
      } catch (java.nio.charset.CharacterCodingException e) {
        error(null, "malformed command line (not UTF-8): " + raw.length + " bytes");
        continue;
      }
      if (!d.line(text) || c < 0) {
        break;
      }
    }
    d.close();
    synchronized (OUT_LOCK) {
      out.flush();
    }
    System.err.flush();
    // grpc-java's threads (netty's event loops, the timer) are not all
    // daemons; everything is written, so leave now.
    Runtime.getRuntime().halt(0);
  }
}
