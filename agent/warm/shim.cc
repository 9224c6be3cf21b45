#include "agent/warm/shim.h"

namespace ds {

// Every name lives inside _dsagent_spare: the script's __main__ namespace is
// this one, emptied before it runs. Traceback frames of "<string>" (this
// source) are cut, so an uncaught exception prints as under python3 itself.
const char kWarmShim[] = R"PY(
def _dsagent_spare():
    import os, sys, socket, struct, time, importlib, signal

    def path0(first):
        if first == '-m':
            return os.getcwd()
        return os.path.dirname(os.path.realpath(first))

    # -c put '' first on the path where a script would put its directory;
    # under -I or PYTHONSAFEPATH (-P) the interpreter puts nothing there, and
    # the path is left as it made it.
    own_slot = (not sys.flags.isolated and not getattr(sys.flags, 'safe_path', False)
                and bool(sys.path) and sys.path[0] == '')
    ctl = socket.socket(fileno=int(sys.argv[1]))
    prefix = sys.orig_argv[:sys.orig_argv.index('-c')]
    if own_slot:
        sys.path[0] = path0(sys.argv[2])
    started = time.monotonic()
    before = dict(os.environb)
    name = ''
    try:
        for name in sys.argv[3:]:
            importlib.import_module(name)
        torch = sys.modules.get('torch')
        if torch is not None and getattr(torch, 'cuda', None) and torch.cuda.is_initialized():
            raise RuntimeError('it initialised CUDA')
    except BaseException as e:
        why = ('import %s failed: %s: %s' % (name, type(e).__name__, e)).replace('\n', ' ')[:400]
        ctl.sendall(b'failed ' + why.encode('utf-8', 'replace') + b'\n')
        os._exit(1)
    # What the imports set in the environment stays set, as in a cold worker.
    added = {k: v for k, v in os.environb.items() if before.get(k) != v}
    with open('/proc/self/statm') as f:
        rss_kib = int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') // 1024
    ctl.sendall(b'ready %d %.3f\n' % (rss_kib, time.monotonic() - started))

    # The assignment: u32 length, then NUL-separated fields, with stdin,
    # stdout and stderr as SCM_RIGHTS on its first byte.
    data, fds = bytearray(), []
    while len(data) < 4 or len(data) < 4 + struct.unpack('<I', data[:4])[0]:
        chunk, anc, _, _ = ctl.recvmsg(1 << 20, socket.CMSG_SPACE(3 * 4))
        if not chunk:
            os._exit(0)  # the agent closed: no next generation here
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += struct.unpack('%di' % (len(raw) // 4), raw[:len(raw) - len(raw) % 4])
        data += chunk
    ctl.close()
    if len(fds) != 3:
        os._exit(127)
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    fields = bytes(data[4:]).split(b'\0')
    nice, workdir, cpus, n = int(fields[0]), fields[1], fields[2], int(fields[3])
    target = [a.decode('utf-8', 'surrogateescape') for a in fields[4:4 + n]]
    os.environb.clear()
    for kv in fields[4 + n:]:
        k, _, v = kv.partition(b'=')
        if k:
            os.environb[k] = v
    for k, v in added.items():
        os.environb.setdefault(k, v)
    tasks = [int(t) for t in os.listdir('/proc/self/task')]
    for t in tasks:  # per thread on Linux: every one the preload started too
        try:
            os.setpriority(os.PRIO_PROCESS, t, nice)
        except OSError:
            pass
    if cpus:
        try:
            for t in tasks:
                os.sched_setaffinity(t, [int(c) for c in cpus.split(b',')])
        except OSError:
            os.write(2, b"dsagent: sched_setaffinity failed for the worker's cores\n")
            os._exit(127)
    if workdir:
        try:
            os.chdir(workdir)
        except OSError as e:
            os.write(2, b'dsagent: cannot start in the working directory ' + workdir + b': ' +
                     e.strerror.encode() + b' (set working_dir: in the job file, or start dslaunch in a '
                     b'directory that exists on every node)\n')
            os._exit(127)
    for s in signal.valid_signals():
        if s in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(s, signal.default_int_handler if s == signal.SIGINT else
                          signal.SIG_IGN if s in (signal.SIGPIPE, signal.SIGXFSZ) else signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])

    sys.orig_argv[:] = prefix + target
    if own_slot:
        sys.path[0] = path0(target[0])
    main = sys.modules['__main__']
    g = main.__dict__
    keep = {k: g[k] for k in ('__builtins__', '__annotations__') if k in g}
    g.clear()
    g.update(keep)
    g.update(__name__='__main__', __doc__=None, __package__=None, __spec__=None, __annotations__={})
    try:
        if target[0] == '-m':
            import runpy
            sys.argv[:] = ['-m'] + target[2:]
            runpy._run_module_as_main(target[1], alter_argv=True)
            return
        sys.argv[:] = target
        path = target[0] if target[0].startswith('/') else os.path.join(os.getcwd(), target[0])
        try:
            import io
            with io.open_code(path) as f:
                source = f.read()
        except OSError as e:
            sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n" %
                             (prefix[0], path, e.errno, e.strerror))
            sys.exit(2)
        import importlib.machinery
        g.update(__file__=path, __cached__=None,
                 __loader__=importlib.machinery.SourceFileLoader('__main__', path))
        exec(compile(source, path, 'exec', dont_inherit=True), g)
    except SystemExit:
        raise
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == '<string>':
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        if not isinstance(e, KeyboardInterrupt):
            sys.exit(1)
        import atexit
        atexit._run_exitfuncs()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


_dsagent_spare()
)PY";

}  // namespace ds
