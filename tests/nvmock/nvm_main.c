// SPDX-License-Identifier: GPL-2.0
/*
 * nvmock: a mock NVIDIA driver (nvidia.ko + nvidia-uvm.ko in one module)
 * with no hardware behind it, for testing cgpu.  This file holds the module
 * parameters, the character devices, /proc/driver/nvidia and the debugfs
 * counters.  See README.md.
 */

#include <linux/cdev.h>
#include <linux/ctype.h>
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>

#include "nvmock.h"

#define NVM_DEFAULT_MEM_MIB	16384
/* FB_GET_INFO answers in KiB in a u32. */
#define NVM_MAX_MEM_MIB		(U32_MAX >> 10)
#define NVM_DEFAULT_NAME	"NVIDIA Mock GPU"
#define NVM_DEFAULT_VERSION	"595.45.04"
#define NVM_BUILD_DATE		"Tue Dec  1 00:00:00 UTC 2026"

static int num_gpus = 2;
module_param(num_gpus, int, 0444);
MODULE_PARM_DESC(num_gpus, "Number of mock GPUs (1..8, default 2)");

static unsigned int mem_mib[NVM_MAX_GPUS];
static int n_mem_mib;
module_param_array(mem_mib, uint, &n_mem_mib, 0444);
MODULE_PARM_DESC(mem_mib, "Frame-buffer size of each GPU in MiB (default 16384)");

static char *gpu_names[NVM_MAX_GPUS];
static int n_gpu_names;
module_param_array(gpu_names, charp, &n_gpu_names, 0444);
MODULE_PARM_DESC(gpu_names, "Model name of each GPU (default \"" NVM_DEFAULT_NAME "\")");

static char *gpu_uuids[NVM_MAX_GPUS];
static int n_gpu_uuids;
module_param_array(gpu_uuids, charp, &n_gpu_uuids, 0444);
MODULE_PARM_DESC(gpu_uuids,
		 "UUID of each GPU, GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (default derived from the index)");

static char *version = NVM_DEFAULT_VERSION;
module_param(version, charp, 0444);
MODULE_PARM_DESC(version,
		 "Driver version; its major number selects version-dependent layouts (default "
		 NVM_DEFAULT_VERSION ")");

unsigned int nvm_num_gpus;
struct nvm_gpu nvm_gpus[NVM_MAX_GPUS];
struct nva_layout nvm_layout;
char nvm_version[NVA_RM_API_VERSION_STRING_LEN];

atomic_t nvm_stat_clients = ATOMIC_INIT(0);
atomic64_t nvm_stat_managed_ranges = ATOMIC64_INIT(0);
atomic_t nvm_stat_live_managed = ATOMIC_INIT(0);

static struct cdev nvm_gpu_cdev, nvm_ctl_cdev, nvm_uvm_cdev, nvm_tools_cdev;
static dev_t nvm_uvm_dev;
static struct class *nvm_class;
static struct proc_dir_entry *nvm_proc;
static struct dentry *nvm_debugfs;

int nvm_gpu_by_uuid(const u8 *uuid)
{
	unsigned int i;

	for (i = 0; i < nvm_num_gpus; i++)
		if (!memcmp(nvm_gpus[i].uuid, uuid, NVA_UUID_LEN))
			return i;
	return -1;
}

/* ---- parameters ------------------------------------------------------------ */

/* "GPU-" then 8-4-4-4-12 hex digits; any case. */
static int nvm_parse_uuid(const char *s, u8 *out)
{
	static const u8 groups[] = { 4, 2, 2, 2, 6 };
	unsigned int g;

	if (strncmp(s, "GPU-", 4))
		return -EINVAL;
	s += 4;
	for (g = 0; g < ARRAY_SIZE(groups); g++) {
		if (g && *s++ != '-')
			return -EINVAL;
		if (hex2bin(out, s, groups[g]))
			return -EINVAL;
		out += groups[g];
		s += 2 * groups[g];
	}
	return *s ? -EINVAL : 0;
}

static void nvm_format_uuid(const u8 *u, char *out)
{
	snprintf(out, NVM_UUID_STR_LEN, "GPU-%*phN-%*phN-%*phN-%*phN-%*phN",
		 4, u, 2, u + 4, 2, u + 6, 2, u + 8, 6, u + 10);
}

/* "595.45.04": digits and dots, starting with the major number. */
static int nvm_parse_version(const char *v, unsigned int *major)
{
	size_t len = strlen(v), i;
	unsigned int n = 0;
	bool in_major = true;

	if (!len || len >= NVA_RM_API_VERSION_STRING_LEN)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (v[i] == '.') {
			in_major = false;
		} else if (!isdigit(v[i])) {
			return -EINVAL;
		} else if (in_major) {
			n = n * 10 + (v[i] - '0');
			if (n > 9999)
				return -EINVAL;
		}
	}
	if (n == 0)
		return -EINVAL;
	*major = n;
	return 0;
}

/*
 * The real driver's MODULE_VERSION is its version, and that is where cgpu
 * reads it (the notifier's struct module, /sys/module/<name>/version).
 * Ours is a parameter: the module's version says it from our init on.  The
 * loader kstrdup'd the default and kfrees whatever is there at unload.
 */
static void nvm_set_module_version(void)
{
	const char *old = THIS_MODULE->version;
	char *v = kstrdup(nvm_version, GFP_KERNEL);

	if (!v)
		return;
	THIS_MODULE->version = v;
	kfree(old);
}

static bool nvm_name_ok(const char *s)
{
	size_t len = strlen(s), i;

	if (!len || len >= NVM_NAME_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!isprint(s[i]))
			return false;
	return true;
}

static int nvm_check_params(void)
{
	unsigned int major, i, j;
	u32 v[3];

	if (num_gpus < 1 || num_gpus > NVM_MAX_GPUS) {
		pr_err("num_gpus=%d is out of range 1..%d\n", num_gpus, NVM_MAX_GPUS);
		return -EINVAL;
	}
	nvm_num_gpus = num_gpus;
	if (n_mem_mib > num_gpus || n_gpu_names > num_gpus || n_gpu_uuids > num_gpus) {
		pr_err("mem_mib, gpu_names and gpu_uuids take at most num_gpus=%d entries\n",
		       num_gpus);
		return -EINVAL;
	}
	if (!version || nvm_parse_version(version, &major)) {
		pr_err("version=\"%s\" is not a driver version like \"%s\"\n",
		       version ? version : "", NVM_DEFAULT_VERSION);
		return -EINVAL;
	}
	strscpy(nvm_version, version, sizeof(nvm_version));
	nva_version_parse(nvm_version, sizeof(nvm_version), v);
	nva_layout_of(v, &nvm_layout);
	nvm_set_module_version();

	for (i = 0; i < nvm_num_gpus; i++) {
		struct nvm_gpu *g = &nvm_gpus[i];
		unsigned int mib = i < n_mem_mib ? mem_mib[i] : NVM_DEFAULT_MEM_MIB;
		const char *name = i < n_gpu_names ? gpu_names[i] : NVM_DEFAULT_NAME;

		if (mib == 0 || mib > NVM_MAX_MEM_MIB) {
			pr_err("mem_mib[%u]=%u is out of range 1..%u\n", i, mib,
			       NVM_MAX_MEM_MIB);
			return -EINVAL;
		}
		if (!name || !nvm_name_ok(name)) {
			pr_err("gpu_names[%u] must be 1..%d printable characters\n", i,
			       NVM_NAME_LEN - 1);
			return -EINVAL;
		}
		g->index = i;
		g->total = (u64)mib << 20;
		g->used = 0;
		g->live_allocs = 0;
		g->bus = i + 1;
		g->gpu_id = (u32)g->bus << 8;	/* domain 0, slot 0 */
		strscpy(g->name, name, sizeof(g->name));
		if (i < n_gpu_uuids) {
			if (!gpu_uuids[i] || nvm_parse_uuid(gpu_uuids[i], g->uuid)) {
				pr_err("gpu_uuids[%u]=\"%s\" is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\n",
				       i, gpu_uuids[i] ? gpu_uuids[i] : "");
				return -EINVAL;
			}
		} else {
			/* GPU-6e766d6f-636b-4000-8000-<index>: "nvmock" */
			static const u8 stem[10] = {
				0x6e, 0x76, 0x6d, 0x6f, 0x63, 0x6b, 0x40, 0x00, 0x80, 0x00
			};

			memcpy(g->uuid, stem, sizeof(stem));
			memset(g->uuid + sizeof(stem), 0, NVA_UUID_LEN - sizeof(stem));
			g->uuid[NVA_UUID_LEN - 1] = i;
		}
		nvm_format_uuid(g->uuid, g->uuid_str);
		for (j = 0; j < i; j++) {
			if (!memcmp(nvm_gpus[j].uuid, g->uuid, NVA_UUID_LEN)) {
				pr_err("gpu_uuids[%u] and gpu_uuids[%u] are both %s\n", j, i,
				       g->uuid_str);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* ---- /proc/driver/nvidia [10.8] ------------------------------------------- */

static int nvm_proc_version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (nvmock)  %s\n",
		   nvm_version, NVM_BUILD_DATE);
	seq_printf(m, "GCC version:  %s\n", CONFIG_CC_VERSION_TEXT);
	return 0;
}

static int nvm_proc_info_show(struct seq_file *m, void *v)
{
	const struct nvm_gpu *g = m->private;

	seq_printf(m, "Model: \t\t %s\n", g->name);
	seq_printf(m, "IRQ:   \t\t %u\n", 16 + g->index);
	seq_printf(m, "GPU UUID: \t %s\n", g->uuid_str);
	seq_puts(m, "Video BIOS: \t ??.??.??.??.??\n");
	seq_puts(m, "Bus Type: \t PCIe\n");
	seq_puts(m, "DMA Size: \t 47 bits\n");
	seq_printf(m, "DMA Mask: \t 0x%llx\n", (1ull << 47) - 1);
	seq_printf(m, "Bus Location: \t %04x:%02x:%02x.%x\n", 0, g->bus, 0, 0);
	seq_printf(m, "Device Minor: \t %u\n", g->index);
	seq_printf(m, "GPU Firmware: \t %s\n", nvm_version);
	seq_puts(m, "GPU Excluded:\t No\n");
	return 0;
}

static int nvm_proc_init(void)
{
	struct proc_dir_entry *gpus, *dir;
	char name[16];
	unsigned int i;

	nvm_proc = proc_mkdir("driver/nvidia", NULL);
	if (!nvm_proc)
		return -EEXIST;
	if (!proc_create_single("version", 0444, nvm_proc, nvm_proc_version_show))
		goto fail;
	gpus = proc_mkdir("gpus", nvm_proc);
	if (!gpus)
		goto fail;
	for (i = 0; i < nvm_num_gpus; i++) {
		snprintf(name, sizeof(name), "%04x:%02x:%02x.%1x", 0, nvm_gpus[i].bus, 0, 0);
		dir = proc_mkdir(name, gpus);
		if (!dir)
			goto fail;
		if (!proc_create_single_data("information", 0444, dir,
					     nvm_proc_info_show, &nvm_gpus[i]))
			goto fail;
	}
	return 0;

fail:
	proc_remove(nvm_proc);
	return -ENOMEM;
}

/* ---- debugfs counters ------------------------------------------------------ */

static int nvm_dbg_total_get(void *data, u64 *val)
{
	*val = ((struct nvm_gpu *)data)->total;
	return 0;
}

static int nvm_dbg_used_get(void *data, u64 *val)
{
	*val = READ_ONCE(((struct nvm_gpu *)data)->used);
	return 0;
}

static int nvm_dbg_allocs_get(void *data, u64 *val)
{
	*val = READ_ONCE(((struct nvm_gpu *)data)->live_allocs);
	return 0;
}

static int nvm_dbg_clients_get(void *data, u64 *val)
{
	*val = atomic_read(&nvm_stat_clients);
	return 0;
}

static int nvm_dbg_managed_get(void *data, u64 *val)
{
	*val = atomic64_read(&nvm_stat_managed_ranges);
	return 0;
}

static int nvm_dbg_live_managed_get(void *data, u64 *val)
{
	*val = atomic_read(&nvm_stat_live_managed);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(nvm_dbg_total_fops, nvm_dbg_total_get, NULL, "%llu\n");
DEFINE_DEBUGFS_ATTRIBUTE(nvm_dbg_used_fops, nvm_dbg_used_get, NULL, "%llu\n");
DEFINE_DEBUGFS_ATTRIBUTE(nvm_dbg_allocs_fops, nvm_dbg_allocs_get, NULL, "%llu\n");
DEFINE_DEBUGFS_ATTRIBUTE(nvm_dbg_clients_fops, nvm_dbg_clients_get, NULL, "%llu\n");
DEFINE_DEBUGFS_ATTRIBUTE(nvm_dbg_managed_fops, nvm_dbg_managed_get, NULL, "%llu\n");
DEFINE_DEBUGFS_ATTRIBUTE(nvm_dbg_live_managed_fops, nvm_dbg_live_managed_get, NULL,
			 "%llu\n");

static void nvm_debugfs_init(void)
{
	struct dentry *dir;
	char name[8];
	unsigned int i;

	/* debugfs failures are not fatal, and its calls cope with error pointers */
	nvm_debugfs = debugfs_create_dir("nvmock", NULL);
	debugfs_create_file_unsafe("clients", 0444, nvm_debugfs, NULL,
				   &nvm_dbg_clients_fops);
	debugfs_create_file_unsafe("managed_ranges", 0444, nvm_debugfs, NULL,
				   &nvm_dbg_managed_fops);
	debugfs_create_file_unsafe("live_managed_ranges", 0444, nvm_debugfs, NULL,
				   &nvm_dbg_live_managed_fops);
	for (i = 0; i < nvm_num_gpus; i++) {
		snprintf(name, sizeof(name), "gpu%u", i);
		dir = debugfs_create_dir(name, nvm_debugfs);
		debugfs_create_file_unsafe("total_bytes", 0444, dir, &nvm_gpus[i],
					   &nvm_dbg_total_fops);
		debugfs_create_file_unsafe("used_bytes", 0444, dir, &nvm_gpus[i],
					   &nvm_dbg_used_fops);
		debugfs_create_file_unsafe("live_allocs", 0444, dir, &nvm_gpus[i],
					   &nvm_dbg_allocs_fops);
	}
}

/* ---- character devices [1] ------------------------------------------------- */

static char *nvm_devnode(struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0666;
	return NULL;
}

static int nvm_cdev_add(struct cdev *cdev, const struct file_operations *fops,
			dev_t dev, unsigned int count)
{
	cdev_init(cdev, fops);
	cdev->owner = THIS_MODULE;
	return cdev_add(cdev, dev, count);
}

static void nvm_nodes_destroy(void)
{
	unsigned int i;

	device_destroy(nvm_class, nvm_uvm_dev + 1);
	device_destroy(nvm_class, nvm_uvm_dev);
	for (i = 0; i < nvm_num_gpus; i++)
		device_destroy(nvm_class, MKDEV(NVA_MAJOR, i));
	device_destroy(nvm_class, MKDEV(NVA_MAJOR, NVA_CTL_MINOR));
	class_destroy(nvm_class);
}

static int nvm_nodes_create(void)
{
	struct device *d;
	unsigned int i;

	nvm_class = class_create(THIS_MODULE, "nvmock");
	if (IS_ERR(nvm_class))
		return PTR_ERR(nvm_class);
	nvm_class->devnode = nvm_devnode;

	d = device_create(nvm_class, NULL, MKDEV(NVA_MAJOR, NVA_CTL_MINOR), NULL,
			  "nvidiactl");
	if (IS_ERR(d))
		goto fail;
	for (i = 0; i < nvm_num_gpus; i++) {
		d = device_create(nvm_class, NULL, MKDEV(NVA_MAJOR, i), NULL, "nvidia%u", i);
		if (IS_ERR(d))
			goto fail;
	}
	d = device_create(nvm_class, NULL, nvm_uvm_dev, NULL, "nvidia-uvm");
	if (IS_ERR(d))
		goto fail;
	d = device_create(nvm_class, NULL, nvm_uvm_dev + 1, NULL, "nvidia-uvm-tools");
	if (IS_ERR(d))
		goto fail;
	return 0;

fail:
	nvm_nodes_destroy();	/* device_destroy() skips nodes never made */
	return PTR_ERR(d);
}

static int __init nvm_init(void)
{
	int ret;

	ret = nvm_check_params();
	if (ret)
		return ret;

	ret = register_chrdev_region(MKDEV(NVA_MAJOR, 0), NVA_MAX_GPU_MINOR + 1, "nvidia");
	if (ret) {
		pr_err("major %d is taken (is the NVIDIA driver loaded?): %d\n",
		       NVA_MAJOR, ret);
		return ret;
	}
	ret = register_chrdev_region(MKDEV(NVA_MAJOR, NVA_CTL_MINOR), 1, "nvidiactl");
	if (ret) {
		pr_err("195:255 is taken: %d\n", ret);
		goto unregister_gpus;
	}
	ret = alloc_chrdev_region(&nvm_uvm_dev, 0, 2, NVA_UVM_CHRDEV_NAME);
	if (ret) {
		pr_err("cannot allocate the nvidia-uvm major: %d\n", ret);
		goto unregister_ctl;
	}
	ret = nvm_cdev_add(&nvm_gpu_cdev, nvm_nvidia_fops(), MKDEV(NVA_MAJOR, 0),
			   nvm_num_gpus);
	if (ret)
		goto unregister_uvm;
	ret = nvm_cdev_add(&nvm_ctl_cdev, nvm_nvidia_fops(),
			   MKDEV(NVA_MAJOR, NVA_CTL_MINOR), 1);
	if (ret)
		goto del_gpu_cdev;
	ret = nvm_cdev_add(&nvm_uvm_cdev, nvm_uvm_fops(), nvm_uvm_dev, 1);
	if (ret)
		goto del_ctl_cdev;
	ret = nvm_cdev_add(&nvm_tools_cdev, nvm_uvm_tools_fops(), nvm_uvm_dev + 1, 1);
	if (ret)
		goto del_uvm_cdev;
	ret = nvm_nodes_create();
	if (ret) {
		pr_err("cannot create the device nodes: %d\n", ret);
		goto del_tools_cdev;
	}
	ret = nvm_proc_init();
	if (ret) {
		pr_err("cannot create /proc/driver/nvidia: %d\n", ret);
		goto destroy_nodes;
	}
	nvm_debugfs_init();
	pr_info("%u mock GPU(s), driver version %s, nvidia-uvm major %d\n",
		nvm_num_gpus, nvm_version, MAJOR(nvm_uvm_dev));
	return 0;

destroy_nodes:
	nvm_nodes_destroy();
del_tools_cdev:
	cdev_del(&nvm_tools_cdev);
del_uvm_cdev:
	cdev_del(&nvm_uvm_cdev);
del_ctl_cdev:
	cdev_del(&nvm_ctl_cdev);
del_gpu_cdev:
	cdev_del(&nvm_gpu_cdev);
unregister_uvm:
	unregister_chrdev_region(nvm_uvm_dev, 2);
unregister_ctl:
	unregister_chrdev_region(MKDEV(NVA_MAJOR, NVA_CTL_MINOR), 1);
unregister_gpus:
	unregister_chrdev_region(MKDEV(NVA_MAJOR, 0), NVA_MAX_GPU_MINOR + 1);
	return ret;
}

static void __exit nvm_exit(void)
{
	debugfs_remove(nvm_debugfs);
	proc_remove(nvm_proc);
	nvm_nodes_destroy();
	cdev_del(&nvm_tools_cdev);
	cdev_del(&nvm_uvm_cdev);
	cdev_del(&nvm_ctl_cdev);
	cdev_del(&nvm_gpu_cdev);
	unregister_chrdev_region(nvm_uvm_dev, 2);
	unregister_chrdev_region(MKDEV(NVA_MAJOR, NVA_CTL_MINOR), 1);
	unregister_chrdev_region(MKDEV(NVA_MAJOR, 0), NVA_MAX_GPU_MINOR + 1);
	nvm_rm_exit();
}

module_init(nvm_init);
module_exit(nvm_exit);

MODULE_LICENSE("GPL");
/* The default; nvm_set_module_version() makes it the version parameter. */
MODULE_VERSION(NVM_DEFAULT_VERSION);
MODULE_DESCRIPTION("Mock NVIDIA driver (nvidia + nvidia-uvm) for testing cgpu, no hardware");
MODULE_AUTHOR("cgpu project");
