#!/usr/bin/env python3
"""Send a hand-made push request to a receive-pack command and print what
comes back, one packet per line (side-band unwrapped).

usage: push-req.py [options] -- CMD...
  --shallow OID           a "shallow OID" line before the commands (repeat)
  --cmd "OLD NEW REF"     a command line (repeat); OLD/NEW may be "zero"
  --caps "a b c"          capabilities of the first command
  --option TEXT           a push option (repeat; sent after the commands)
  --pack FILE             pack bytes to send after the commands
  --truncate N            send only the first N bytes of the pack
  --flip OFFSET           flip one byte of the pack at OFFSET (negative: from the end)
  --close-early           close stdin right after the (possibly truncated) pack
  --delay SECONDS         wait before sending the commands (after the advertisement)

The advertisement is read first; "zero" ids take the length of the first
advertised id. Output: "adv <line>" for the advertisement, then the report
packets ("unpack ok", "ok refs/..."), "band2 <text>" for messages, "ERR ..."
for error packets, and "exit <status>" of the command.
"""
import os
import subprocess
import sys
import time


def pkt(data):
    if isinstance(data, str):
        data = data.encode()
    return b"%04x" % (len(data) + 4) + data


def read_exact(f, n):
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_pkt(f):
    head = read_exact(f, 4)
    if head is None:
        return None
    n = int(head, 16)
    if n == 0:
        return b""
    return read_exact(f, n - 4)


def main():
    args = sys.argv[1:]
    cmds, options, caps, pack, trunc, flip, close_early, delay = [], [], None, None, None, None, False, 0
    shallows = []
    while args and args[0] != "--":
        a = args.pop(0)
        if a == "--cmd":
            cmds.append(args.pop(0))
        elif a == "--shallow":
            shallows.append(args.pop(0))
        elif a == "--caps":
            caps = args.pop(0)
        elif a == "--option":
            options.append(args.pop(0))
        elif a == "--pack":
            pack = open(args.pop(0), "rb").read()
        elif a == "--truncate":
            trunc = int(args.pop(0))
        elif a == "--flip":
            flip = int(args.pop(0))
        elif a == "--close-early":
            close_early = True
        elif a == "--delay":
            delay = float(args.pop(0))
        else:
            sys.exit("unknown option " + a)
    args.pop(0)
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = []
    hexlen = None
    sideband = caps is not None and "side-band-64k" in caps.split()
    while True:
        line = read_pkt(p.stdout)
        if line is None or line == b"":
            break
        text = line.rstrip(b"\n")
        if hexlen is None:
            hexlen = text.index(b" ")
        out.append("adv " + text.split(b"\0")[0].decode(errors="replace"))
    zero = "0" * (hexlen or 40)
    if delay:
        time.sleep(delay)
    req = b""
    for s in shallows:
        req += pkt("shallow " + s + "\n")
    for i, c in enumerate(cmds):
        c = " ".join(zero if w == "zero" else w for w in c.split(" "))
        if i == 0 and caps is not None:
            req += pkt(c.encode() + b"\0" + caps.encode())
        else:
            req += pkt(c + "\n")
    req += b"0000"
    if options:
        for o in options:
            req += pkt(o + "\n")
        req += b"0000"
    try:
        p.stdin.write(req)
        if pack is not None:
            data = bytearray(pack)
            if flip is not None:
                data[flip] ^= 0xFF
            if trunc is not None:
                data = data[:trunc]
            p.stdin.write(bytes(data))
        p.stdin.flush()
        if close_early or pack is None or trunc is not None:
            p.stdin.close()
    except BrokenPipeError:
        pass

    def show(payload):
        for l in payload.split(b"\n"):
            if l:
                out.append(l.decode(errors="replace"))

    while True:
        line = read_pkt(p.stdout)
        if line is None:
            break
        if line == b"":
            if not sideband:
                out.append("flush")
            continue
        if sideband:
            band, payload = line[0], line[1:]
            if band == 1:
                # the report is a pkt-line stream inside band 1
                while payload:
                    n = int(payload[:4], 16)
                    if n == 0:
                        out.append("flush")
                        payload = payload[4:]
                        continue
                    out.append(payload[4:n].rstrip(b"\n").decode(errors="replace"))
                    payload = payload[n:]
            elif band == 2:
                for l in payload.split(b"\n"):
                    if l:
                        out.append("band2 " + l.decode(errors="replace"))
            else:
                out.append("band3 " + payload.decode(errors="replace").rstrip("\n"))
        else:
            out.append(line.rstrip(b"\n").decode(errors="replace"))
    try:
        p.stdin.close()
    except BrokenPipeError:
        pass
    status = p.wait()
    for l in out:
        print(l)
    print("exit %d" % status)


if __name__ == "__main__":
    main()
