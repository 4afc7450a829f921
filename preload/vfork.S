/* vfork.S - vfork must not return through a C frame: the child runs on the
 * parent's stack, and a wrapper's epilogue in the child would corrupt the
 * frame the parent returns into.  So: call the prepare hook (a normal call
 * that returns and leaves the stack as it was), then jump to libc's vfork
 * with our caller's return address still on top. */
#if defined(__x86_64__)
	.text
	.globl vfork
	.type vfork, @function
vfork:
	.cfi_startproc
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	call rs_vfork_prepare
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	mov rs_real_vfork(%rip), %rax
	test %rax, %rax
	jz 1f
	jmp *%rax
1:	jmp rs_fb_vfork
	.cfi_endproc
	.size vfork, .-vfork
#elif defined(__aarch64__)
	.text
	.globl vfork
	.type vfork, %function
vfork:
	stp x29, x30, [sp, #-16]!
	bl rs_vfork_prepare
	ldp x29, x30, [sp], #16
	adrp x16, rs_real_vfork
	ldr x16, [x16, :lo12:rs_real_vfork]
	cbz x16, 1f
	br x16
1:	b rs_fb_vfork
	.size vfork, .-vfork
#endif
	.section .note.GNU-stack,"",%progbits
