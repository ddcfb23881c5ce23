# expect: 2:5: unknown label 'nowhere'
jmp nowhere
