#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hwloc XML machines that tests/topo uses (hwloc XML format 2.0, read by
hwloc 2.x; checked with 2.9 and 2.10). Run from anywhere: python3 gen_topologies.py [DIR]

hwloc's synthetic topologies cannot carry PCI devices, so these are written as XML
text. PCI vendor/device ids are illustrative (NVIDIA 0x10de GPUs of class 0x0302,
a Broadcom-style switch, an AMD-style root port, a Mellanox NIC, an ASPEED BMC VGA);
only the tree shape, classes and NVIDIA's vendor id matter to arbench.

  pcie8_4switch_2socket.xml  8 GPUs, 4 PCIe switches (2 GPUs each), 2 host bridges per
                             socket, 2 sockets; plus a NIC, a BMC VGA and GPU audio
                             functions that must not count as GPUs
  pcie4_hostbridge.xml       4 GPUs on root ports of one host bridge, no switches
  pcie4_cascade.xml          4 GPUs behind cascaded switches: a first switch with GPU0,
                             GPU1 and a second switch (GPU2, GPU3) below it
  nvlink2.xml                2 GPUs on two host bridges of one socket, joined by NVLink:
                             an "NVLinkBandwidth" distances matrix between the GPUs'
                             NVML OS devices, as hwloc's NVML backend records it
  nvlink4_pairs.xml          4 GPUs, NVLink only within the pairs 0-1 and 2-3
"""
import os
import sys


class Machine:
    def __init__(self, cores_per_package, packages):
        self.gp = 0
        self.cores = cores_per_package
        self.packages = packages
        self.nvml = []  # gp indexes of NVML OS devices, in GPU order

    def next_gp(self):
        self.gp += 1
        return self.gp

    @staticmethod
    def mask(bits):
        value = 0
        for b in bits:
            value |= 1 << b
        return "0x%08x" % value

    def pci_bridge(self, busid, secondary, subordinate, depth, vendor_device, children):
        attrs = ('type="Bridge" gp_index="%d" bridge_type="1-1" depth="%d" bridge_pci="0000:[%02x-%02x]" '
                 'pci_busid="%s" pci_type="0604 [%s] [0000:0000] 00" pci_link_speed="0.000000"'
                 % (self.next_gp(), depth, secondary, subordinate, busid, vendor_device))
        return (attrs, children)

    def pci_dev(self, busid, cls, vendor_device, sub, children=()):
        attrs = ('type="PCIDev" gp_index="%d" pci_busid="%s" pci_type="%s [%s] [%s] a1" pci_link_speed="0.000000"'
                 % (self.next_gp(), busid, cls, vendor_device, sub))
        return (attrs, list(children))

    def gpu(self, busid, with_nvml):
        children = []
        if with_nvml:
            gp = self.next_gp()
            self.nvml.append(gp)
            children.append(('type="OSDev" gp_index="%d" name="nvml%d" osdev_type="1"' % (gp, len(self.nvml) - 1), []))
        return self.pci_dev(busid, "0302", "10de:2bb5", "10de:204e", children)

    def host_bridge(self, first_bus, last_bus, children):
        return ('type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" bridge_pci="0000:[%02x-%02x]"'
                % (self.next_gp(), first_bus, last_bus), children)

    def render(self, io_per_package, nvlink_pairs=()):
        out = ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
               '<topology version="2.0">']
        all_pus = range(self.cores * self.packages)
        nodes = range(self.packages)
        out.append('  <object type="Machine" os_index="0" cpuset="%s" complete_cpuset="%s" allowed_cpuset="%s" '
                   'nodeset="%s" complete_nodeset="%s" allowed_nodeset="%s" gp_index="%d">'
                   % ((self.mask(all_pus),) * 3 + (self.mask(nodes),) * 3 + (self.next_gp(),)))
        out.append('    <info name="Backend" value="arbench-tests"/>')
        for p in range(self.packages):
            pus = range(p * self.cores, (p + 1) * self.cores)
            cs, ns = self.mask(pus), self.mask([p])
            sets = 'cpuset="%s" complete_cpuset="%s" nodeset="%s" complete_nodeset="%s"' % (cs, cs, ns, ns)
            out.append('    <object type="Package" os_index="%d" %s gp_index="%d">' % (p, sets, self.next_gp()))
            out.append('      <object type="NUMANode" os_index="%d" %s gp_index="%d" local_memory="68719476736"/>'
                       % (p, sets, self.next_gp()))
            for c in pus:
                one = self.mask([c])
                s1 = 'cpuset="%s" complete_cpuset="%s" nodeset="%s" complete_nodeset="%s"' % (one, one, ns, ns)
                out.append('      <object type="Core" os_index="%d" %s gp_index="%d">' % (c, s1, self.next_gp()))
                out.append('        <object type="PU" os_index="%d" %s gp_index="%d"/>' % (c, s1, self.next_gp()))
                out.append('      </object>')
            for io in io_per_package[p]:
                self.emit(out, io, 6)
            out.append('    </object>')
        out.append('  </object>')
        if nvlink_pairs:
            n = len(self.nvml)
            values = [0] * (n * n)
            for a, b in nvlink_pairs:
                # bandwidth units are hwloc's (MB/s); any non-zero value means a link
                values[a * n + b] = values[b * n + a] = 450000
            idx = "".join("%d " % g for g in self.nvml)
            val = "".join("%d " % v for v in values)
            out.append('  <distances2 type="OSDev" nbobjs="%d" kind="9" name="NVLinkBandwidth" indexing="gp">' % n)
            out.append('    <indexes length="%d">%s</indexes>' % (len(idx), idx))
            out.append('    <u64values length="%d">%s</u64values>' % (len(val), val))
            out.append('  </distances2>')
        out.append('</topology>')
        return "\n".join(out) + "\n"

    def emit(self, out, node, indent):
        attrs, children = node
        pad = " " * indent
        if not children:
            out.append('%s<object %s/>' % (pad, attrs))
            return
        out.append('%s<object %s>' % (pad, attrs))
        for c in children:
            self.emit(out, c, indent + 2)
        out.append('%s</object>' % pad)


def switch_box():
    m = Machine(cores_per_package=8, packages=2)
    io = [[], []]
    for h in range(4):
        b = 0x10 + 0x20 * h
        ports = []
        for k in range(2):
            gbus = b + 3 + k
            gpu = m.gpu("0000:%02x:00.0" % gbus, False)
            audio = m.pci_dev("0000:%02x:00.1" % gbus, "0403", "10de:22e8", "10de:204e")
            ports.append(m.pci_bridge("0000:%02x:%02x.0" % (b + 2, k), gbus, gbus, 3, "1000:c030", [gpu, audio]))
        last = b + 4
        if h == 0:  # a NIC on the first switch, as in GPU servers with one NIC per switch
            nic = m.pci_dev("0000:%02x:00.0" % (b + 5), "0200", "15b3:1021", "15b3:0023")
            ports.append(m.pci_bridge("0000:%02x:02.0" % (b + 2), b + 5, b + 5, 3, "1000:c030", [nic]))
            last = b + 5
        usp = m.pci_bridge("0000:%02x:00.0" % (b + 1), b + 2, last, 2, "1000:c030", ports)
        root = m.pci_bridge("0000:%02x:01.0" % b, b + 1, last, 1, "1022:1483", [usp])
        children = [root]
        if h == 0:  # the BMC's VGA: class 0x0300 but not NVIDIA's, so not a GPU
            vga = m.pci_dev("0000:%02x:00.0" % (b + 0xa), "0300", "1a03:2000", "1a03:2000")
            children.append(m.pci_bridge("0000:%02x:02.0" % b, b + 0xa, b + 0xa, 1, "1022:1483", [vga]))
        io[h // 2].append(m.host_bridge(b, b + 0x1f, children))
    return m.render(io)


def hostbridge_box():
    m = Machine(cores_per_package=8, packages=1)
    ports = []
    for k in range(4):
        gpu = m.gpu("0000:%02x:00.0" % (k + 1), False)
        ports.append(m.pci_bridge("0000:00:%02x.1" % (k + 1), k + 1, k + 1, 1, "1022:1483", [gpu]))
    return m.render([[m.host_bridge(0x00, 0x7f, ports)]])


def cascade_box():
    m = Machine(cores_per_package=8, packages=1)
    inner = []
    for k in range(2):  # second switch: upstream port on bus 0x05, GPUs on 0x07, 0x08
        gpu = m.gpu("0000:%02x:00.0" % (7 + k), False)
        inner.append(m.pci_bridge("0000:06:%02x.0" % k, 7 + k, 7 + k, 5, "1000:c030", [gpu]))
    usp2 = m.pci_bridge("0000:05:00.0", 6, 8, 4, "1000:c030", inner)
    outer = []
    for k in range(2):  # first switch: GPUs on 0x03, 0x04
        gpu = m.gpu("0000:%02x:00.0" % (3 + k), False)
        outer.append(m.pci_bridge("0000:02:%02x.0" % k, 3 + k, 3 + k, 3, "1000:c030", [gpu]))
    outer.append(m.pci_bridge("0000:02:02.0", 5, 8, 3, "1000:c030", [usp2]))
    usp1 = m.pci_bridge("0000:01:00.0", 2, 8, 2, "1000:c030", outer)
    root = m.pci_bridge("0000:00:01.0", 1, 8, 1, "1022:1483", [usp1])
    return m.render([[m.host_bridge(0x00, 0x7f, [root])]])


def nvlink_box(ngpus, pairs):
    m = Machine(cores_per_package=8, packages=1)
    bridges = []
    for k in range(ngpus):
        b = 0x20 * (k + 1)
        gpu = m.gpu("0000:%02x:00.0" % (b + 1), True)
        root = m.pci_bridge("0000:%02x:01.0" % b, b + 1, b + 1, 1, "8086:352a", [gpu])
        bridges.append(m.host_bridge(b, b + 0x1f, [root]))
    return m.render([bridges], pairs)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    files = {
        "pcie8_4switch_2socket.xml": switch_box(),
        "pcie4_hostbridge.xml": hostbridge_box(),
        "pcie4_cascade.xml": cascade_box(),
        "nvlink2.xml": nvlink_box(2, [(0, 1)]),
        "nvlink4_pairs.xml": nvlink_box(4, [(0, 1), (2, 3)]),
    }
    for name, text in files.items():
        with open(os.path.join(outdir, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
